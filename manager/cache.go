package manager

import (
	"context"
	"reflect"
	"time"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/buildconfig"
	orgspace "code.cloudfoundry.org/cf-hnc/org-space"
	"code.cloudfoundry.org/cf-hnc/processes"
	"code.cloudfoundry.org/cf-hnc/staging"
)

// cacheOptions are what the manager caches, for the tree, and how little of each:
//   - namespaces of that tree only, and the anchors cf-hnc made, not every one of a cluster that
//     HNC may share with other tenants;
//   - build-config Secrets and ServiceAccounts only, not every Secret of the cluster;
//   - pods, StatefulSets and kpack objects of the tree only (inTree): anybody who may write
//     them elsewhere in the cluster, with any label, costs the manager a name each;
//   - of the pods of apps (kpack's build pods, the instances) only what is read;
//   - of CF objects, whose metadata tenants write, only the labels and annotations cf-hnc
//     reads (cfMetadata);
//   - no managed fields but those of the Secrets and ServiceAccounts an operator placed, and
//     no copy of kubectl's last-applied configuration on those.
func cacheOptions(tree *tree) cache.Options {
	stripped := cache.TransformStripManagedFields()
	byObject := map[client.Object]cache.ByObject{
		&corev1.Namespace{}:               {Label: tree.inTree},
		&hncv1alpha2.SubnamespaceAnchor{}: {Label: orgspace.AnchorSelector},
		&corev1.Secret{}:                  {Label: buildconfig.Selector, Transform: trimBuildConfig},
		&corev1.ServiceAccount{}:          {Label: buildconfig.Selector, Transform: trimBuildConfig},
		&corev1.Pod{}:                     {Label: processes.AppSelector, Transform: tree.only(trimAppPod, labels.Nothing())},
		&appsv1.StatefulSet{}:             {Label: processes.AppSelector, Transform: tree.only(stripped, labels.Nothing())},
		&kpackv1alpha2.Image{}:            {Label: processes.AppSelector, Transform: tree.only(stripped, labels.Nothing())},
		&kpackv1alpha2.Build{}:            {Label: processes.AppSelector, Transform: tree.only(trimKpackBuild, labels.Nothing())},
		// The dedicated Builders cf-hnc makes in spaces, a space's own, and the default Builders
		// that operators place, also in a namespace before HNC makes it an org's (no one label
		// selects them all). Outside the tree, config/policies must keep the build-config label
		// to operators, as it does in the tree.
		&kpackv1alpha2.Builder{}: {Transform: tree.only(stripped, buildconfig.Selector)},
	}
	for _, kind := range []client.Object{&cfv1alpha1.CFOrg{}, &cfv1alpha1.CFSpace{}, &cfv1alpha1.CFApp{},
		&cfv1alpha1.CFPackage{}, &cfv1alpha1.CFBuild{}, &cfv1alpha1.CFProcess{}} {
		byObject[kind] = cache.ByObject{Transform: trimCFObject}
	}
	// Managed fields are most of a namespace's or a CFSpace's size, and nothing reads them,
	// but the propagation reconciler on the Secrets and ServiceAccounts placed.
	return cache.Options{DefaultTransform: stripped, ByObject: byObject}
}

// trimAppPod keeps of a cached pod of an app what is read of it: of a build pod what the
// rollout and the build reconciler read (staging), of an instance's pod what its process's
// status reads (processes).
func trimAppPod(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok && processes.IsInstance(pod) {
		return processes.TrimInstancePod(pod), nil
	}
	return staging.TrimBuildPod(obj)
}

// trimBuildConfig drops from a cached Secret or ServiceAccount what nothing reads: kubectl's
// last-applied annotation, a second copy of the object that HNC copies into every space with
// it, and the managed fields of HNC's copies, most of the cached objects. The managed fields of
// what an operator placed stay: the propagation reconciler reads them.
func trimBuildConfig(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	delete(o.GetAnnotations(), corev1.LastAppliedConfigAnnotation)
	if buildconfig.IsCopy(o) {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// trimKpackBuild keeps of a kpack Build its metadata but the managed fields, of its spec what
// staging and upgrades read (the environment that names the CFBuild it stages, what a rebuild
// started from and the run image it is for), and its status but the states of its steps, which
// cf-hnc does not read (it reads a failed build's pod): the kubelet keeps up to 4 KiB of a
// failed step's log in its termination message, kpack copies it there, and kpack keeps twenty
// Builds per app, each with the package's image reference of up to 4 KiB in its source.
// cf-hnc creates Builds (rebases) and never applies or updates one it read.
func trimKpackBuild(obj any) (any, error) {
	kb, ok := obj.(*kpackv1alpha2.Build)
	if !ok {
		return obj, nil
	}
	trimmed := &kpackv1alpha2.Build{TypeMeta: kb.TypeMeta, ObjectMeta: kb.ObjectMeta, Status: kb.Status,
		Spec: kpackv1alpha2.BuildSpec{Env: kb.Spec.Env, LastBuild: kb.Spec.LastBuild, RunImage: kb.Spec.RunImage}}
	trimmed.ManagedFields = nil
	trimmed.Status.StepStates = nil
	return trimmed, nil
}

// cfMetadata are the label and annotation keys of CF objects that cf-hnc reads (or selects
// by): the key of a display name (orgs, spaces), a rebuild's marks (builds), a start and a
// restart (processes). Tenants write the rest of the metadata of CF objects, up to the bounds
// of config/policies; the manager holds none of it.
var cfMetadata = []string{
	cfv1alpha1.DisplayNameKeyLabel,
	cfv1alpha1.RebuildOfLabel, cfv1alpha1.KpackBuildLabel, cfv1alpha1.KpackBuildNumberLabel, cfv1alpha1.RebuildReasonAnnotation,
	cfv1alpha1.AppStartedAtAnnotation, cfv1alpha1.RestartedAtAnnotation,
}

// maxCFMetadataValue bounds each value that the manager keeps of cfMetadata: names, numbers,
// reasons and times, each far shorter. A longer one, which only a tenant writes, is dropped.
const maxCFMetadataValue = 256

// trimCFObject keeps of a CF object's labels and annotations those cf-hnc reads (cfMetadata),
// and drops its managed fields. Writes of these objects are patches of what changed, never
// updates of the whole object, which would write back what the cache left out.
func trimCFObject(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	o.SetLabels(onlyRead(o.GetLabels()))
	o.SetAnnotations(onlyRead(o.GetAnnotations()))
	o.SetManagedFields(nil)
	return obj, nil
}

func onlyRead(m map[string]string) map[string]string {
	var kept map[string]string
	for _, key := range cfMetadata {
		if value, ok := m[key]; ok && len(value) <= maxCFMetadataValue {
			if kept == nil {
				kept = map[string]string{}
			}
			kept[key] = value
		}
	}
	return kept
}

// treeWait bounds how long a transform waits for the cache's namespaces to sync, once, when the
// manager starts: a cache that cannot list the tree's namespaces holds no object's content.
const treeWait = 30 * time.Second

// tree tells the transforms of the cache whether an object is in a namespace of CF's tree, from
// the cache's own namespaces, which are those of the tree (cacheOptions).
type tree struct {
	namespaces client.Reader
	inTree     labels.Selector
}

// newCache is the manager's NewCache: it makes the cache, and reads the tree's namespaces from
// it.
func (t *tree) newCache(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(config, opts)
	t.namespaces = c
	return c, err
}

// only keeps an object of the tree, or one that placed selects wherever it is, as trim makes
// it, and of any other only its name: label selectors cannot say "in the tree", and anybody
// may label a pod, a StatefulSet or a kpack object anywhere. A cache transform cannot drop an
// object, so the informer keeps a name, with nothing that maps it to a reconcile (no labels,
// no spec).
//
// A namespace becomes part of the tree (HNC labels it) before cf-hnc, kpack or Kubernetes'
// controllers make anything in it: cf-hnc makes StatefulSets and Images only once it has read
// the namespace from this cache. Only what an operator places may come before (placed). When
// the manager starts, the transform waits for the cache's namespaces.
func (t *tree) only(trim toolscache.TransformFunc, placed labels.Selector) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		o, ok := obj.(client.Object)
		if !ok || placed.Matches(labels.Set(o.GetLabels())) || t.holds(o.GetNamespace()) {
			return trim(obj)
		}
		return nameOnly(o), nil
	}
}

// holds says whether the namespace is one of the tree's; a namespace that the cache does not
// hold (within treeWait, when it starts) is not.
func (t *tree) holds(namespace string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), treeWait)
	defer cancel()
	ns := &corev1.Namespace{}
	return t.namespaces.Get(ctx, client.ObjectKey{Name: namespace}, ns) == nil && t.inTree.Matches(labels.Set(ns.Labels))
}

// nameOnly is an object of obj's type with obj's name, namespace, UID and resource version, and
// nothing else.
func nameOnly(obj client.Object) client.Object {
	o := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
	o.SetNamespace(obj.GetNamespace())
	o.SetName(obj.GetName())
	o.SetUID(obj.GetUID())
	o.SetResourceVersion(obj.GetResourceVersion())
	return o
}
