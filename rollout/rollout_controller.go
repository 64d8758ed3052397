package rollout

import (
	"context"
	"slices"
	"sync"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"code.cloudfoundry.org/cf-hnc/staging"
)

// rolloutKey is the one request of the rollout reconciler: it decides for all pods at once.
var rolloutKey = ctrl.Request{NamespacedName: types.NamespacedName{Name: "rebuild-pods"}}

// RolloutReconciler lets at most a given number of gated rebuild pods run at once, across the
// foundation.
type RolloutReconciler struct {
	client client.Client
	limit  int

	// released are the pods whose gate this process lifted and whose update the cache may
	// not show yet: they count as running, so that a stale cache never lets more run.
	mu       sync.Mutex
	released map[types.UID]bool
}

// NewRolloutReconciler returns a RolloutReconciler that lets limit rebuild pods run at once;
// limit < 1 lets every one run at once.
func NewRolloutReconciler(c client.Client, limit int) *RolloutReconciler {
	return &RolloutReconciler{client: c, limit: limit, released: map[types.UID]bool{}}
}

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile lifts the gate of the rebuild pods whose turn it is.
func (r *RolloutReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	pods := &corev1.PodList{}
	if err := r.client.List(ctx, pods, client.MatchingLabelsSelector{Selector: staging.BuildPodSelector}); err != nil {
		return ctrl.Result{}, err
	}
	tree, err := r.treeNamespaces(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetSeen(pods.Items)
	plan := planRollout(pods.Items, tree, r.limit, r.released)
	rebuildPods.WithLabelValues("waiting").Set(float64(plan.waiting))
	rebuildPods.WithLabelValues("running").Set(float64(plan.running))
	for _, pod := range plan.release {
		if err := r.release(ctx, pod); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	return ctrl.Result{}, nil
}

// release lifts the rollout gate of a pod.
func (r *RolloutReconciler) release(ctx context.Context, pod *corev1.Pod) error {
	patch := client.MergeFromWithOptions(pod.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pod.Spec.SchedulingGates = slices.DeleteFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == Gate })
	if err := r.client.Patch(ctx, pod, patch); err != nil {
		return err
	}
	r.released[pod.UID] = true
	ctrl.LoggerFrom(ctx).Info("Let a rebuild pod run", "pod", client.ObjectKeyFromObject(pod), "reason", pod.Annotations[kpackv1alpha2.BuildReasonAnnotation])
	return nil
}

// treeNamespaces are the names of the namespaces of CF's tree: the manager's cache holds those
// and no other (manager.Options), as the build reconciler relies on to find spaces.
func (r *RolloutReconciler) treeNamespaces(ctx context.Context) (sets.Set[string], error) {
	namespaces := &corev1.NamespaceList{}
	if err := r.client.List(ctx, namespaces, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	tree := sets.New[string]()
	for i := range namespaces.Items {
		tree.Insert(namespaces.Items[i].Name)
	}
	return tree, nil
}

// forgetSeen forgets the released pods that the cache shows without their gate, or not at all.
func (r *RolloutReconciler) forgetSeen(pods []corev1.Pod) {
	stillGated := map[types.UID]bool{}
	for i := range pods {
		if gated(&pods[i]) {
			stillGated[pods[i].UID] = true
		}
	}
	for uid := range r.released {
		if !stillGated[uid] {
			delete(r.released, uid)
		}
	}
}

// SetupWithManager registers the reconciler and its gauge: any change of a paced pod (made, let
// run, finished, deleted) may let another one run.
func (r *RolloutReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := registerMetrics(); err != nil {
		return err
	}
	paced := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetAnnotations()[PacedAnnotation]
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("rollout").
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []ctrl.Request {
			return []ctrl.Request{rolloutKey}
		}), builder.WithPredicates(paced)).
		Complete(r)
}
