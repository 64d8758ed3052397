// Package propagation gets everything a build needs from where an operator placed it once (an
// org or the root namespace) into every space, through HNC, and finds it again in each space.
//
// An operator labels a registry credential Secret, the build ServiceAccount or a kpack
// Builder with workloads.cloudfoundry.org/build-config=true. The Reconciler marks it for HNC
// (which runs in AllowPropagate mode for these kinds, see config/hnc) and keeps every labelled
// ServiceAccount's secrets in line with the labelled credentials. Discovery resolves, for one
// space, which of the copies and the space's own objects a build uses: the nearest level wins.
package propagation

import (
	"context"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// BuildConfigSelector selects the objects an operator marked for builds. The manager's cache
// holds only these Secrets and ServiceAccounts.
var BuildConfigSelector = labels.SelectorFromSet(labels.Set{cfv1alpha1.BuildConfigLabel: "true"})

// Discovery resolves the build configuration of spaces.
type Discovery struct {
	cached   client.Reader
	uncached client.Reader
}

// NewDiscovery returns a Discovery that reads build-config objects from cached, and checks
// other Secrets that a build ServiceAccount names (which the cache does not hold) in uncached.
func NewDiscovery(cached, uncached client.Reader) *Discovery {
	return &Discovery{cached: cached, uncached: uncached}
}

// Sources are the kinds the build configuration is resolved from: a change to one of them in
// a space may change what the space's builds use.
func (d *Discovery) Sources() []client.Object {
	return []client.Object{&corev1.Secret{}, &corev1.ServiceAccount{}, &kpackv1alpha2.Builder{}}
}

// +kubebuilder:rbac:groups="",resources=secrets;serviceaccounts,verbs=get;list;watch
// +kubebuilder:rbac:groups=kpack.io,resources=builders,verbs=get;list;watch

// Resolve returns what builds in the namespace use, as far as it can be resolved, and the
// BuildReady condition that says whether it is complete and valid.
func (d *Discovery) Resolve(ctx context.Context, namespace string) (*cfv1alpha1.SpaceBuildConfig, metav1.Condition, error) {
	in, err := d.observe(ctx, namespace)
	if err != nil {
		return nil, metav1.Condition{}, err
	}
	r := resolve(in)
	return &r.config, r.condition(), nil
}

// observe reads the build-config objects of a namespace.
func (d *Discovery) observe(ctx context.Context, namespace string) (buildInputs, error) {
	in := buildInputs{namespace: &corev1.Namespace{}, missingSecrets: map[string]bool{}}
	if err := d.cached.Get(ctx, client.ObjectKey{Name: namespace}, in.namespace); err != nil {
		return in, err
	}
	selected := []client.ListOption{client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: BuildConfigSelector}}
	secrets := &corev1.SecretList{}
	if err := d.cached.List(ctx, secrets, selected...); err != nil {
		return in, err
	}
	in.secrets = secrets.Items
	serviceAccounts := &corev1.ServiceAccountList{}
	if err := d.cached.List(ctx, serviceAccounts, selected...); err != nil {
		return in, err
	}
	in.serviceAccounts = serviceAccounts.Items
	builders := &kpackv1alpha2.BuilderList{}
	if err := d.cached.List(ctx, builders, selected...); err != nil {
		return in, err
	}
	in.builders = builders.Items

	known := map[string]bool{}
	for _, s := range in.secrets {
		known[s.Name] = true
	}
	for i := range in.serviceAccounts {
		for _, name := range referencedSecrets(&in.serviceAccounts[i]) {
			if known[name] || in.missingSecrets[name] {
				continue
			}
			exists, err := d.secretExists(ctx, namespace, name)
			if err != nil {
				return in, err
			}
			known[name], in.missingSecrets[name] = exists, !exists
		}
	}
	return in, nil
}

// secretExists looks up a Secret that is not a build-config Secret, by its metadata only.
func (d *Discovery) secretExists(ctx context.Context, namespace, name string) (bool, error) {
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := d.uncached.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
