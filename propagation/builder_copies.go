package propagation

import (
	"context"
	"fmt"
	"time"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlbuilder "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"
)

// resyncCondition is the condition the BuilderCopyReconciler adds to a Builder's status to make
// kpack look at it again. kpack replaces the whole status on its next reconcile, so the condition
// goes away by itself.
const resyncCondition = "ResyncRequested"

// BuilderCopyReconciler makes kpack build a Builder copy again once the ServiceAccount and
// Secrets it needs have reached the namespace.
//
// HNC copies a new space's objects in no particular order, so a Builder copy can arrive before
// its ServiceAccount or credentials. kpack then fails to build it, retries with a backoff that
// doubles on every failure, and watches neither ServiceAccounts nor Secrets. A space could wait
// minutes for a Builder whose ServiceAccount arrived long before. This reconciler writes kpack's
// status only when a dependency arrived after kpack's last failure. A failure with everything
// already in place is kpack's to report, not something to retry.
type BuilderCopyReconciler struct {
	client client.Client
}

// +kubebuilder:rbac:groups=kpack.io,resources=builders/status,verbs=patch

// SetupBuilderCopies registers the reconciler: it runs for Builder copies, and for the build
// ServiceAccounts and credentials arriving in their namespaces.
func SetupBuilderCopies(mgr ctrl.Manager) error {
	r := &BuilderCopyReconciler{client: mgr.GetClient()}
	copies := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, copied := o.GetLabels()[hncv1alpha2.LabelInheritedFrom]
		return copied
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("propagation-builder-copies").
		For(&kpackv1alpha2.Builder{}, ctrlbuilder.WithPredicates(copies)).
		Watches(&corev1.ServiceAccount{}, handler.EnqueueRequestsFromMapFunc(r.builderCopiesBeside)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.builderCopiesBeside)).
		Complete(r)
}

// Reconcile asks kpack to look at a failed Builder copy again if one of its dependencies
// arrived after kpack's failure.
func (r *BuilderCopyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &kpackv1alpha2.Builder{}
	if err := r.client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	failed, ok := lastFailure(b)
	if !ok || b.Status.GetCondition(resyncCondition) != nil {
		return ctrl.Result{}, nil
	}
	arrived, complete, err := r.dependenciesArrived(ctx, b)
	if err != nil || !complete || arrived.Before(failed.Truncate(time.Second)) {
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("asking kpack to build the Builder again: its ServiceAccount or Secrets arrived after kpack's last failure",
		"failed", failed, "arrived", arrived)
	patch := client.MergeFromWithOptions(b.DeepCopy(), client.MergeFromWithOptimisticLock{})
	b.Status.Conditions = append(b.Status.Conditions, corev1alpha1.Condition{
		Type:               resyncCondition,
		Status:             corev1.ConditionTrue,
		Reason:             "DependenciesArrived",
		Message:            fmt.Sprintf("cf-hnc: ServiceAccount %s and its Secrets arrived after kpack's last failure", b.Spec.ServiceAccount()),
		LastTransitionTime: corev1alpha1.VolatileTime{Inner: metav1.Now()},
	})
	return ctrl.Result{}, r.client.Status().Patch(ctx, b, patch)
}

// lastFailure is when kpack last failed to build a Builder that has no image yet.
func lastFailure(b *kpackv1alpha2.Builder) (time.Time, bool) {
	ready := b.Status.GetCondition(corev1alpha1.ConditionReady)
	if b.Status.LatestImage != "" || ready == nil || !ready.IsFalse() {
		return time.Time{}, false
	}
	return ready.LastTransitionTime.Inner.Time, true
}

// dependenciesArrived returns when the last of a Builder's ServiceAccount and the Secrets it
// names arrived, and whether all of them are there. Build-config copies are in the cache.
func (r *BuilderCopyReconciler) dependenciesArrived(ctx context.Context, b *kpackv1alpha2.Builder) (time.Time, bool, error) {
	sa := &corev1.ServiceAccount{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.ServiceAccount()}, sa); err != nil {
		return time.Time{}, false, client.IgnoreNotFound(err)
	}
	arrived := sa.CreationTimestamp.Time
	for _, name := range referencedSecrets(sa) {
		secret := &corev1.Secret{}
		if err := r.client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, secret); err != nil {
			return time.Time{}, false, client.IgnoreNotFound(err)
		}
		if secret.CreationTimestamp.After(arrived) {
			arrived = secret.CreationTimestamp.Time
		}
	}
	return arrived, true, nil
}

// builderCopiesBeside maps a ServiceAccount or Secret to the Builder copies in its namespace.
func (r *BuilderCopyReconciler) builderCopiesBeside(ctx context.Context, o client.Object) []ctrl.Request {
	builders := &kpackv1alpha2.BuilderList{}
	if err := r.client.List(ctx, builders, client.InNamespace(o.GetNamespace()), client.HasLabels{hncv1alpha2.LabelInheritedFrom}); err != nil {
		return nil
	}
	requests := make([]ctrl.Request, 0, len(builders.Items))
	for i := range builders.Items {
		requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&builders.Items[i])})
	}
	return requests
}
