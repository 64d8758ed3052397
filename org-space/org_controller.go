package orgspace

import (
	"context"
	"errors"

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

// OrgReconciler makes each CFOrg in the root namespace an org namespace under it.
type OrgReconciler struct {
	client   client.Client
	uncached client.Reader
	reporter *status.Reporter
	recorder events.EventRecorder
	root     string
}

// NewOrgReconciler returns an OrgReconciler for orgs in the root namespace; uncached says when
// an org's namespace is gone.
func NewOrgReconciler(c client.Client, uncached client.Reader, recorder events.EventRecorder, root string) *OrgReconciler {
	return &OrgReconciler{client: c, uncached: uncached, reporter: status.NewReporter(c, recorder), recorder: recorder, root: root}
}

// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cforgs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cforgs/status;cforgs/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=hnc.x-k8s.io,resources=subnamespaceanchors,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=hnc.x-k8s.io,resources=hierarchyconfigurations,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile makes the org's namespace exist with its labels, or deletes it with its spaces.
func (r *OrgReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	org := &cfv1alpha1.CFOrg{}
	if err := r.client.Get(ctx, req.NamespacedName, org); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !org.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, org)
	}
	if err := addFinalizerAndKey(ctx, r.client, org); err != nil {
		return ctrl.Result{}, err
	}
	report := r.reporter.Track(org)
	defer func() { err = errors.Join(err, report(ctx)) }()

	ready, err := r.reconcileNamespace(ctx, org)
	if err != nil {
		return ctrl.Result{}, err
	}
	status.Set(org, ready)
	return requeue(ready), nil
}

// reconcileNamespace returns the Ready condition after making the namespace, unless the org is
// misplaced, its name cannot name a namespace, or another org already has its display name.
func (r *OrgReconciler) reconcileNamespace(ctx context.Context, org *cfv1alpha1.CFOrg) (metav1.Condition, error) {
	if org.Namespace != r.root {
		return notReady(cfv1alpha1.WrongNamespaceReason,
			"orgs live in the root namespace %s, not in %s", r.root, org.Namespace), nil
	}
	if invalid := cfv1alpha1.ValidateGUID(org.Name); invalid != "" {
		return notReady(cfv1alpha1.InvalidNameReason, "name %q names the org's namespace: %s", org.Name, invalid), nil
	}
	orgs := &cfv1alpha1.CFOrgList{}
	if err := r.client.List(ctx, orgs, client.InNamespace(r.root), client.UnsafeDisableDeepCopy); err != nil {
		return metav1.Condition{}, err
	}
	if owner := cfv1alpha1.DisplayNameOwner(orgs.Items, org.Spec.DisplayName); owner != nil && owner.Name != org.Name {
		return notReady(cfv1alpha1.DuplicateNameReason,
			"org %s already has the name %q", owner.Name, org.Spec.DisplayName), nil
	}
	ready, _, err := orgNamespace(org).ensure(ctx, r.client)
	return ready, err
}

// reconcileDelete lets HNC delete the org's namespace with its spaces, then releases the org.
func (r *OrgReconciler) reconcileDelete(ctx context.Context, org *cfv1alpha1.CFOrg) (ctrl.Result, error) {
	sub := orgNamespace(org)
	if !controllerutil.ContainsFinalizer(org, Finalizer) {
		return ctrl.Result{}, nil
	}
	if err := sub.allowCascadingDeletion(ctx, r.client); err != nil {
		return ctrl.Result{}, err
	}
	return sub.finishDeletion(ctx, r.client, r.uncached, r.recorder, org)
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
