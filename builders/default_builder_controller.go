package builders

import (
	"context"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/buildconfig"
	"code.cloudfoundry.org/cf-hnc/internal/apply"
)

// fieldOwner is the server-side apply field manager of the ClusterBuilders this package writes.
const fieldOwner = client.FieldOwner("cf-hnc-builders")

// placedBuilderAnnotation on a ClusterBuilder names the default Builder it is made from, as
// "<namespace>/<name>".
const placedBuilderAnnotation = "workloads.cloudfoundry.org/placed-builder"

// serviceAccountRecheck is how often a ClusterBuilder that waits for its ServiceAccount is
// looked at again: a ServiceAccount that is not build configuration is not cached or watched.
const serviceAccountRecheck = 10 * time.Second

// DefaultBuilderReconciler makes one kpack ClusterBuilder of every default Builder placed in the
// root or an org namespace, and deletes it when the Builder goes or loses its label. Spaces
// below build with the ClusterBuilder: a stack update then rebuilds one builder image per
// placed Builder, however many spaces there are.
//
// The ClusterBuilder pushes with the ServiceAccount that the placed Builder names: an org's in
// the org namespace, the root's in the builder namespace, outside HNC's tree. The root's push
// credential must reach no space, and HNC v1.1.0 sends every space a DELETE for each Secret
// and ServiceAccount in the root that it does not propagate, on every namespace change in
// the tree (ADR 9).
type DefaultBuilderReconciler struct {
	client           client.Client
	uncached         client.Reader
	root             string
	builderNamespace string
}

// NewDefaultBuilderReconciler returns a DefaultBuilderReconciler for orgs in the root
// namespace, whose default Builders push with ServiceAccounts in builderNamespace; uncached
// reads ServiceAccounts that the cache does not hold.
func NewDefaultBuilderReconciler(c client.Client, uncached client.Reader, root, builderNamespace string) *DefaultBuilderReconciler {
	return &DefaultBuilderReconciler{client: c, uncached: uncached, root: root, builderNamespace: builderNamespace}
}

// +kubebuilder:rbac:groups=kpack.io,resources=clusterbuilders,verbs=get;list;watch;create;patch;delete

// Reconcile makes, updates or deletes the ClusterBuilder of one placed Builder.
func (r *DefaultBuilderReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	current := &kpackv1alpha2.ClusterBuilder{}
	key := client.ObjectKey{Name: buildconfig.ClusterBuilderName(req.Namespace, req.Name)}
	if err := r.client.Get(ctx, key, current); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		current = nil
	}
	placed, err := r.placedBuilder(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if placed == nil {
		if current == nil {
			return ctrl.Result{}, nil
		}
		log.FromContext(ctx).Info("deleting the ClusterBuilder of a default Builder that is gone", "clusterBuilder", current.Name)
		return ctrl.Result{}, client.IgnoreNotFound(r.client.Delete(ctx, current, client.Preconditions{UID: &current.UID}))
	}
	// kpack fails a ClusterBuilder whose ServiceAccount is missing or names no credentials yet
	// (cf-hnc fills an org's a moment after it is placed), and backs off for ever longer: make
	// it only once the ServiceAccount names its credentials.
	serviceAccount := r.serviceAccountOf(placed)
	if ready, err := r.serviceAccountReady(ctx, serviceAccount); err != nil || !ready {
		return ctrl.Result{RequeueAfter: serviceAccountRecheck}, err
	}
	_, err = apply.Object(ctx, r.client, current, desiredClusterBuilder(placed, serviceAccount), fieldOwner)
	return ctrl.Result{}, err
}

// placedBuilder returns the default Builder of a request if it is one: labelled, not a copy,
// in the root or an org namespace; else nil.
func (r *DefaultBuilderReconciler) placedBuilder(ctx context.Context, key client.ObjectKey) (*kpackv1alpha2.Builder, error) {
	builder := &kpackv1alpha2.Builder{}
	if err := r.client.Get(ctx, key, builder); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if buildconfig.IsCopy(builder) || !buildconfig.Selector.Matches(labels.Set(builder.Labels)) || !builder.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: key.Namespace}, ns); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !buildconfig.PlacesForSpaces(ns, r.root) {
		return nil, nil // a space's own Builder is used as it is
	}
	return builder, nil
}

// serviceAccountOf is the ServiceAccount that the ClusterBuilder of a placed Builder pushes
// with: the one it names, in the builder namespace for the root's, in the org's own namespace
// for an org's.
func (r *DefaultBuilderReconciler) serviceAccountOf(placed *kpackv1alpha2.Builder) corev1.ObjectReference {
	namespace := placed.Namespace
	if namespace == r.root {
		namespace = r.builderNamespace
	}
	return corev1.ObjectReference{Namespace: namespace, Name: placed.Spec.ServiceAccount()}
}

// serviceAccountReady says whether the ServiceAccount exists and names a Secret, which kpack
// takes the push credentials from.
func (r *DefaultBuilderReconciler) serviceAccountReady(ctx context.Context, ref corev1.ObjectReference) (bool, error) {
	sa := &corev1.ServiceAccount{}
	err := r.uncached.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, sa)
	switch {
	case apierrors.IsNotFound(err):
		log.FromContext(ctx).Info("waiting for the ServiceAccount of a default Builder", "serviceAccount", ref.Namespace+"/"+ref.Name)
		return false, nil
	case err != nil:
		return false, err
	case len(sa.Secrets) == 0:
		log.FromContext(ctx).Info("waiting for the ServiceAccount of a default Builder to name its credentials", "serviceAccount", ref.Namespace+"/"+ref.Name)
		return false, nil
	}
	return true, nil
}

// desiredClusterBuilder is the ClusterBuilder of a placed Builder: its spec, pushed with the
// given ServiceAccount to its repository, where kpack tags it "clusterbuilder-<name>".
func desiredClusterBuilder(placed *kpackv1alpha2.Builder, serviceAccount corev1.ObjectReference) *kpackv1alpha2.ClusterBuilder {
	spec := *placed.Spec.BuilderSpec.DeepCopy()
	if ref, err := name.ParseReference(spec.Tag); err == nil {
		spec.Tag = ref.Context().Name()
	}
	return &kpackv1alpha2.ClusterBuilder{
		ObjectMeta: metav1.ObjectMeta{
			Name:        buildconfig.ClusterBuilderName(placed.Namespace, placed.Name),
			Labels:      map[string]string{cfv1alpha1.DefaultBuilderLabel: "true"},
			Annotations: map[string]string{placedBuilderAnnotation: placed.Namespace + "/" + placed.Name},
		},
		Spec: kpackv1alpha2.ClusterBuilderSpec{
			BuilderSpec:       spec,
			ServiceAccountRef: serviceAccount,
		},
	}
}

// SetupWithManager registers the reconciler: it runs for Builders, for those placed in a
// namespace when HNC puts it in CF's tree or labels it an org's, and for the ClusterBuilders it
// made, mapped back to the Builder (so that one whose Builder went while the manager was down
// is deleted when the manager starts).
func (r *DefaultBuilderReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("default-builder").
		For(&kpackv1alpha2.Builder{})
	return buildconfig.WatchPlacements(b, r.client, r.root, func() client.ObjectList { return &kpackv1alpha2.BuilderList{} }).
		Watches(&kpackv1alpha2.ClusterBuilder{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			namespace, builder, ok := strings.Cut(o.GetAnnotations()[placedBuilderAnnotation], "/")
			if !ok {
				return nil
			}
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: namespace, Name: builder}}}
		})).
		Complete(r)
}
