// Package buildconfig is the read model of cf-hnc: what a build in a space uses, found where an
// operator placed it once (the root, an org, or the space itself), and whether all of it has
// arrived and is valid. org-space reports it as the space's BuildReady condition and
// status.build, propagation fills build ServiceAccounts with the credentials that win, and
// builders stages with what it names.
//
// An operator labels registry credential Secrets, the build ServiceAccount and default kpack
// Builders with workloads.cloudfoundry.org/build-config=true. HNC copies the Secrets and
// ServiceAccounts into every space below; Builders stay where they are placed, and spaces below
// build with a ClusterBuilder that cf-hnc makes from each. The nearest level wins.
package buildconfig

import (
	"context"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// Selector selects the objects an operator marked for builds. The manager's cache holds only
// these Secrets and ServiceAccounts.
var Selector = labels.SelectorFromSet(labels.Set{cfv1alpha1.BuildConfigLabel: "true"})

// PropagationBlockedAnnotation is set by cf-hnc on a build-config object that HNC refuses to
// propagate, with HNC's reason, so that the spaces below say why they miss it.
const PropagationBlockedAnnotation = "workloads.cloudfoundry.org/propagation-blocked"

// Discovery resolves the build configuration of spaces.
type Discovery struct {
	cached   client.Reader
	uncached client.Reader
}

// NewDiscovery returns a Discovery that reads build-config objects, namespaces and
// ClusterBuilders from cached, and the few objects that the cache does not hold (a Secret
// that a build ServiceAccount names, a space's own object in the way of a copy) from uncached.
func NewDiscovery(cached, uncached client.Reader) *Discovery {
	return &Discovery{cached: cached, uncached: uncached}
}

// Sources are the kinds the build configuration is resolved from: a change to one of them in
// a space or above it may change what the space's builds use.
func Sources() []client.Object {
	return []client.Object{&corev1.Secret{}, &corev1.ServiceAccount{}, &kpackv1alpha2.Builder{}}
}

// +kubebuilder:rbac:groups="",resources=secrets;serviceaccounts,verbs=get;list;watch
// +kubebuilder:rbac:groups=kpack.io,resources=builders;clusterbuilders,verbs=get;list;watch

// Resolve returns what builds in the space namespace use, as far as it can be resolved, and the
// BuildReady condition that says whether it is complete and valid.
func (d *Discovery) Resolve(ctx context.Context, space *corev1.Namespace) (*cfv1alpha1.SpaceBuildConfig, metav1.Condition, error) {
	in, err := d.observe(ctx, space)
	if err != nil {
		return nil, metav1.Condition{}, err
	}
	r := resolve(in)
	return &r.config, r.condition(), nil
}

// observe reads what a space's build configuration is resolved from.
func (d *Discovery) observe(ctx context.Context, space *corev1.Namespace) (inputs, error) {
	in := inputs{ancestry: ancestryOf(space), missingSecrets: map[string]bool{}}
	var err error
	if in.secrets, err = d.secrets(ctx, space.Name); err != nil {
		return in, err
	}
	if in.serviceAccounts, err = d.serviceAccounts(ctx, space.Name); err != nil {
		return in, err
	}
	for _, namespace := range append([]string{space.Name}, in.ancestry.ancestors()...) {
		if err := d.observeBuilders(ctx, &in, namespace); err != nil {
			return in, err
		}
	}
	for _, ancestor := range in.ancestry.ancestors() {
		if err := d.observeUnpropagated(ctx, &in, ancestor); err != nil {
			return in, err
		}
	}
	return in, d.observeMissingSecrets(ctx, &in)
}

// observeBuilders adds the default Builders placed in a namespace and, above the space, the
// ClusterBuilders made from them. Copies of Builders (HNC propagated them before cf-hnc made
// ClusterBuilders) are not placements.
func (d *Discovery) observeBuilders(ctx context.Context, in *inputs, namespace string) error {
	builders, err := d.builders(ctx, namespace)
	if err != nil {
		return err
	}
	for i := range builders {
		builder := &builders[i]
		if IsCopy(builder) {
			continue
		}
		candidate := builderCandidate{builder: builder}
		if namespace != in.ancestry.namespace {
			cb := &kpackv1alpha2.ClusterBuilder{}
			err := d.cached.Get(ctx, client.ObjectKey{Name: ClusterBuilderName(namespace, builder.Name)}, cb)
			if client.IgnoreNotFound(err) != nil {
				return err
			}
			if err == nil {
				candidate.clusterBuilder = cb
			}
		}
		in.builders = append(in.builders, candidate)
	}
	return nil
}

// observeUnpropagated adds the Secrets and ServiceAccounts placed in an ancestor that have no
// copy in the space, and, for one that HNC refuses to propagate, whether an object of the
// space's own stands in the way.
func (d *Discovery) observeUnpropagated(ctx context.Context, in *inputs, ancestor string) error {
	secrets, err := d.secrets(ctx, ancestor)
	if err != nil {
		return err
	}
	serviceAccounts, err := d.serviceAccounts(ctx, ancestor)
	if err != nil {
		return err
	}
	var sources []metav1.Object
	for i := range secrets {
		sources = append(sources, &secrets[i])
	}
	for i := range serviceAccounts {
		sources = append(sources, &serviceAccounts[i])
	}
	for _, source := range sources {
		if IsCopy(source) {
			continue // a copy of something placed higher up: checked against its own source
		}
		kind := "Secret"
		var copies []metav1.Object
		if _, isSA := source.(*corev1.ServiceAccount); isSA {
			kind = "ServiceAccount"
			for i := range in.serviceAccounts {
				copies = append(copies, &in.serviceAccounts[i])
			}
		} else {
			for i := range in.secrets {
				copies = append(copies, &in.secrets[i])
			}
		}
		if hasCopy(copies, source.GetName(), ancestor) {
			continue
		}
		u := unpropagated{kind: kind, name: source.GetName(), from: ancestor,
			blocked: source.GetAnnotations()[PropagationBlockedAnnotation]}
		// Only a refused source can have an object of the space in its way: HNC refuses to mark
		// a source that would overwrite one, and overwrites one made after. Looking for it
		// otherwise would cost an uncached read for every copy still on its way.
		if u.blocked != "" {
			if u.conflicting, err = d.exists(ctx, kind, in.ancestry.namespace, source.GetName()); err != nil {
				return err
			}
		}
		in.unpropagated = append(in.unpropagated, u)
	}
	return nil
}

func hasCopy(objects []metav1.Object, name, from string) bool {
	for _, o := range objects {
		if o.GetName() == name && o.GetLabels()[hncv1alpha2.LabelInheritedFrom] == from {
			return true
		}
	}
	return false
}

// observeMissingSecrets finds the Secrets that the space's build-config ServiceAccounts name
// but that do not exist there.
func (d *Discovery) observeMissingSecrets(ctx context.Context, in *inputs) error {
	known := map[string]bool{}
	for _, s := range in.secrets {
		known[s.Name] = true
	}
	for i := range in.serviceAccounts {
		for _, name := range ReferencedSecrets(&in.serviceAccounts[i]) {
			if known[name] || in.missingSecrets[name] {
				continue
			}
			exists, err := d.exists(ctx, "Secret", in.ancestry.namespace, name)
			if err != nil {
				return err
			}
			known[name], in.missingSecrets[name] = exists, !exists
		}
	}
	return nil
}

// exists looks up an object that the cache does not hold, by its metadata only.
func (d *Discovery) exists(ctx context.Context, kind, namespace, name string) (bool, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	err := d.uncached.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// secrets, serviceAccounts and builders return the build-config objects of a namespace.
func (d *Discovery) secrets(ctx context.Context, namespace string) ([]corev1.Secret, error) {
	l := &corev1.SecretList{}
	err := d.cached.List(ctx, l, inNamespace(namespace)...)
	return l.Items, err
}

func (d *Discovery) serviceAccounts(ctx context.Context, namespace string) ([]corev1.ServiceAccount, error) {
	l := &corev1.ServiceAccountList{}
	err := d.cached.List(ctx, l, inNamespace(namespace)...)
	return l.Items, err
}

func (d *Discovery) builders(ctx context.Context, namespace string) ([]kpackv1alpha2.Builder, error) {
	l := &kpackv1alpha2.BuilderList{}
	err := d.cached.List(ctx, l, inNamespace(namespace)...)
	return l.Items, err
}

func inNamespace(namespace string) []client.ListOption {
	return []client.ListOption{client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: Selector}}
}
