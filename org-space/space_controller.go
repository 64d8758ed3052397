package orgspace

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/status"
	"code.cloudfoundry.org/cf-hnc/propagation"
)

// SpaceReconciler makes each CFSpace in an org namespace a space namespace under the org, and
// reports whether the space can build.
type SpaceReconciler struct {
	client    client.Client
	recorder  events.EventRecorder
	root      string
	discovery *propagation.Discovery
}

// NewSpaceReconciler returns a SpaceReconciler for spaces of orgs in the root namespace.
func NewSpaceReconciler(c client.Client, recorder events.EventRecorder, root string, discovery *propagation.Discovery) *SpaceReconciler {
	return &SpaceReconciler{client: c, recorder: recorder, root: root, discovery: discovery}
}

// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfspaces,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfspaces/status;cfspaces/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cforgs,verbs=get;list;watch

// Reconcile makes the space's namespace exist with its labels and resolves its build
// configuration, or deletes the namespace.
func (r *SpaceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	space := &cfv1alpha1.CFSpace{}
	if err := r.client.Get(ctx, req.NamespacedName, space); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !space.DeletionTimestamp.IsZero() {
		return spaceNamespace(space).finishDeletion(ctx, r.client, r.recorder, space)
	}
	if err := addFinalizer(ctx, r.client, space); err != nil {
		return ctrl.Result{}, err
	}
	original := space.DeepCopy()
	ready, err := r.reconcileNamespace(ctx, space)
	if err != nil {
		return ctrl.Result{}, err
	}
	buildReady := metav1.Condition{Type: cfv1alpha1.BuildReadyCondition, Status: metav1.ConditionFalse,
		Reason: cfv1alpha1.NamespaceNotReadyReason, Message: "the space namespace is not ready"}
	if ready.Status == metav1.ConditionTrue {
		if space.Status.Build, buildReady, err = r.discovery.Resolve(ctx, space.Name); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.labelBuildReadiness(ctx, space, buildReady); err != nil {
			return ctrl.Result{}, err
		}
	}
	setCondition(&space.Status.Conditions, ready, space.Generation)
	setCondition(&space.Status.Conditions, buildReady, space.Generation)
	space.Status.ObservedGeneration = space.Generation
	var result ctrl.Result
	// A Secret that the build ServiceAccount names but that is no build-config Secret is not
	// watched (the cache holds only those): look again now and then.
	if needsOperator(ready) || buildReady.Reason == cfv1alpha1.ServiceAccountSecretMissingReason {
		result.RequeueAfter = operatorRecheck
	}
	return result, status.Report(ctx, r.client, r.recorder, space, original, original.Status.Conditions, space.Status.Conditions)
}

// reconcileNamespace returns the Ready condition after making the namespace, unless the space
// is not in an org namespace, its org is going away, or its display name is taken.
func (r *SpaceReconciler) reconcileNamespace(ctx context.Context, space *cfv1alpha1.CFSpace) (metav1.Condition, error) {
	org := &cfv1alpha1.CFOrg{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: r.root, Name: space.Namespace}, org); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return metav1.Condition{}, err
		}
		return notReady(cfv1alpha1.WrongNamespaceReason,
			"spaces live in org namespaces; %s is not one", space.Namespace), nil
	}
	if !org.DeletionTimestamp.IsZero() {
		return notReady(cfv1alpha1.OrgNotReadyReason, "org %s is being deleted", org.Name), nil
	}
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := r.client.List(ctx, spaces, client.InNamespace(space.Namespace)); err != nil {
		return metav1.Condition{}, err
	}
	if first := firstWithName(spaces.Items, space.Spec.DisplayName); first != nil && first.Name != space.Name {
		return notReady(cfv1alpha1.DuplicateNameReason,
			"space %s of this org already has the name %q", first.Name, space.Spec.DisplayName), nil
	}
	return spaceNamespace(space).ensure(ctx, r.client)
}

// labelBuildReadiness keeps the namespace's build-ready label in line with BuildReady, so that
// spaces that cannot build are found with a label selector.
func (r *SpaceReconciler) labelBuildReadiness(ctx context.Context, space *cfv1alpha1.CFSpace, buildReady metav1.Condition) error {
	ns := spaceNamespace(space)
	ns.labels[cfv1alpha1.BuildReadyLabel] = strconv.FormatBool(buildReady.Status == metav1.ConditionTrue)
	return ns.label(ctx, r.client)
}

func spaceNamespace(space *cfv1alpha1.CFSpace) subnamespace {
	return subnamespace{
		parent: space.Namespace,
		name:   space.Name,
		labels: map[string]string{
			cfv1alpha1.OrgGUIDLabel:   space.Namespace,
			cfv1alpha1.SpaceGUIDLabel: space.Name,
		},
		annotations: map[string]string{cfv1alpha1.SpaceNameAnnotation: space.Spec.DisplayName},
	}
}

// SetupWithManager registers the reconciler: it runs for CFSpaces, for anchors in org
// namespaces, for space namespaces, for the org (a space waits for it) and for every object
// that the space's build configuration is resolved from.
func (r *SpaceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	notInRoot := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() != r.root })
	b := ctrl.NewControllerManagedBy(mgr).
		Named("cfspace").
		For(&cfv1alpha1.CFSpace{}).
		Watches(&hncv1alpha2.SubnamespaceAnchor{}, handler.EnqueueRequestsFromMapFunc(sameName),
			builder.WithPredicates(notInRoot)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.spaceOf)).
		Watches(&cfv1alpha1.CFOrg{}, handler.EnqueueRequestsFromMapFunc(r.spacesOfOrg),
			builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	for _, kind := range r.discovery.Sources() {
		b = b.Watches(kind, handler.EnqueueRequestsFromMapFunc(r.spaceOfNamespace))
	}
	return b.Complete(r)
}

// spaceOf maps a space namespace to its CFSpace, through the annotation HNC puts on every
// subnamespace (cf-hnc's own labels come later).
func (r *SpaceReconciler) spaceOf(_ context.Context, ns client.Object) []ctrl.Request {
	parent := ns.GetAnnotations()[hncv1alpha2.SubnamespaceOf]
	if parent == "" || parent == r.root {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: parent, Name: ns.GetName()}}}
}

// spaceOfNamespace maps an object in a space namespace to the space.
func (r *SpaceReconciler) spaceOfNamespace(ctx context.Context, o client.Object) []ctrl.Request {
	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: o.GetNamespace()}, ns); err != nil {
		return nil
	}
	return r.spaceOf(ctx, ns)
}

// spacesOfOrg maps an org to all its spaces.
func (r *SpaceReconciler) spacesOfOrg(ctx context.Context, o client.Object) []ctrl.Request {
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := r.client.List(ctx, spaces, client.InNamespace(o.GetName())); err != nil {
		return nil
	}
	requests := make([]ctrl.Request, 0, len(spaces.Items))
	for _, s := range spaces.Items {
		requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
	}
	return requests
}
