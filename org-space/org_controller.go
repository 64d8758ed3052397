package orgspace

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/status"
)

// deletionPoll is how often a deletion that waits for HNC and the namespace controller is
// looked at again, in case the event that ends the wait is missed.
const deletionPoll = 5 * time.Second

// operatorRecheck is how often a namespace conflict that only an operator can solve is looked
// at again.
const operatorRecheck = time.Minute

// OrgReconciler makes each CFOrg in the root namespace an org namespace under it.
type OrgReconciler struct {
	client   client.Client
	recorder events.EventRecorder
	root     string
}

// NewOrgReconciler returns an OrgReconciler for orgs in the root namespace.
func NewOrgReconciler(c client.Client, recorder events.EventRecorder, root string) *OrgReconciler {
	return &OrgReconciler{client: c, recorder: recorder, root: root}
}

// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cforgs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cforgs/status;cforgs/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=hnc.x-k8s.io,resources=subnamespaceanchors,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=hnc.x-k8s.io,resources=hierarchyconfigurations,verbs=get;create;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile makes the org's namespace exist with its labels, or deletes it with its spaces.
func (r *OrgReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	org := &cfv1alpha1.CFOrg{}
	if err := r.client.Get(ctx, req.NamespacedName, org); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !org.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, org)
	}
	if err := addFinalizer(ctx, r.client, org); err != nil {
		return ctrl.Result{}, err
	}
	original := org.DeepCopy()
	ready, err := r.reconcileNamespace(ctx, org)
	if err != nil {
		return ctrl.Result{}, err
	}
	setCondition(&org.Status.Conditions, ready, org.Generation)
	org.Status.ObservedGeneration = org.Generation
	var result ctrl.Result
	if needsOperator(ready) {
		result.RequeueAfter = operatorRecheck
	}
	return result, status.Report(ctx, r.client, r.recorder, org, original, original.Status.Conditions, org.Status.Conditions)
}

// reconcileNamespace returns the Ready condition after making the namespace, unless the org is
// misplaced or another org already has its display name.
func (r *OrgReconciler) reconcileNamespace(ctx context.Context, org *cfv1alpha1.CFOrg) (metav1.Condition, error) {
	if org.Namespace != r.root {
		return notReady(cfv1alpha1.WrongNamespaceReason,
			"orgs live in the root namespace %s, not in %s", r.root, org.Namespace), nil
	}
	orgs := &cfv1alpha1.CFOrgList{}
	if err := r.client.List(ctx, orgs, client.InNamespace(r.root)); err != nil {
		return metav1.Condition{}, err
	}
	if first := firstWithName(orgs.Items, org.Spec.DisplayName); first != nil && first.Name != org.Name {
		return notReady(cfv1alpha1.DuplicateNameReason,
			"org %s already has the name %q", first.Name, org.Spec.DisplayName), nil
	}
	ns := orgNamespace(org)
	ready, err := ns.ensure(ctx, r.client)
	if err != nil || ready.Status != metav1.ConditionTrue {
		return ready, err
	}
	return ready, ns.label(ctx, r.client)
}

// reconcileDelete lets HNC delete the org's namespace with its spaces, then releases the org.
func (r *OrgReconciler) reconcileDelete(ctx context.Context, org *cfv1alpha1.CFOrg) (ctrl.Result, error) {
	ns := orgNamespace(org)
	if controllerutil.ContainsFinalizer(org, Finalizer) {
		if err := ns.allowCascadingDeletion(ctx, r.client); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ns.finishDeletion(ctx, r.client, r.recorder, org)
}

func orgNamespace(org *cfv1alpha1.CFOrg) subnamespace {
	return subnamespace{
		parent:      org.Namespace,
		name:        org.Name,
		labels:      map[string]string{cfv1alpha1.OrgGUIDLabel: org.Name},
		annotations: map[string]string{cfv1alpha1.OrgNameAnnotation: org.Spec.DisplayName},
	}
}

// SetupWithManager registers the reconciler: it runs for CFOrgs, for anchors in the root
// namespace and for org namespaces.
func (r *OrgReconciler) SetupWithManager(mgr ctrl.Manager) error {
	inRoot := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.root })
	return ctrl.NewControllerManagedBy(mgr).
		Named("cforg").
		For(&cfv1alpha1.CFOrg{}).
		Watches(&hncv1alpha2.SubnamespaceAnchor{}, handler.EnqueueRequestsFromMapFunc(sameName),
			builder.WithPredicates(inRoot)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, ns client.Object) []ctrl.Request {
			// HNC's annotation is on the namespace before cf-hnc's labels are.
			if ns.GetAnnotations()[hncv1alpha2.SubnamespaceOf] != r.root {
				return nil
			}
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: r.root, Name: ns.GetName()}}}
		})).
		Complete(r)
}

// sameName maps an anchor to the org or space of the same name in the same namespace.
func sameName(_ context.Context, o client.Object) []ctrl.Request {
	return []ctrl.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
}

func notReady(reason, format string, args ...any) metav1.Condition {
	return metav1.Condition{Type: cfv1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
		Reason: reason, Message: fmt.Sprintf(format, args...)}
}
