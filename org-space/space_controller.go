package orgspace

import (
	"context"
	"errors"
	"strings"
	"time"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/buildconfig"
	"code.cloudfoundry.org/cf-hnc/internal/metrics"
	"code.cloudfoundry.org/cf-hnc/internal/status"
)

// SpaceReconciler makes each CFSpace in an org namespace a space namespace under the org, and
// reports whether the space can build.
type SpaceReconciler struct {
	client      client.Client
	uncached    client.Reader
	reporter    *status.Reporter
	recorder    events.EventRecorder
	root        string
	discovery   *buildconfig.Discovery
	concurrency int
	// buildReady observes how long new spaces take to become BuildReady, from this reconciler's
	// start on.
	buildReady *metrics.BuildReadyObserver
	// waits paces the writes of what a space's wait for HNC's copies waits for.
	waits *waitPacer
}

// waitDetailsInterval is how often at most the status says anew what a space's wait for HNC's
// copies still waits for.
const waitDetailsInterval = time.Second

// NewSpaceReconciler returns a SpaceReconciler for spaces of orgs in the root namespace that
// reconciles up to concurrency spaces at once; uncached says when a space's namespace is gone.
func NewSpaceReconciler(c client.Client, uncached client.Reader, recorder events.EventRecorder, root string, discovery *buildconfig.Discovery, concurrency int) *SpaceReconciler {
	return &SpaceReconciler{client: c, uncached: uncached, reporter: status.NewReporter(c, recorder), recorder: recorder, root: root,
		discovery: discovery, concurrency: concurrency, buildReady: metrics.NewBuildReadyObserver(), waits: newWaitPacer(waitDetailsInterval)}
}

// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfspaces,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfspaces/status;cfspaces/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cforgs,verbs=get;list;watch

// Reconcile makes the space's namespace exist with its labels and resolves its build
// configuration, or deletes the namespace.
func (r *SpaceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	space := &cfv1alpha1.CFSpace{}
	if err := r.client.Get(ctx, req.NamespacedName, space); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !space.DeletionTimestamp.IsZero() {
		r.buildReady.Forget(space.UID)
		r.waits.forget(space.UID)
		return spaceNamespace(space).finishDeletion(ctx, r.client, r.uncached, r.recorder, space)
	}
	if err := addFinalizerAndKey(ctx, r.client, space); err != nil {
		return ctrl.Result{}, err
	}
	report := r.reporter.Track(space)
	before := space.Status.DeepCopy()
	wasBuildReady := meta.IsStatusConditionTrue(space.Status.Conditions, cfv1alpha1.BuildReadyCondition)
	defer func() {
		err = errors.Join(err, report(ctx))
		// Observed once the status that says so is written, as a client watching it sees it.
		if err == nil && !wasBuildReady && meta.IsStatusConditionTrue(space.Status.Conditions, cfv1alpha1.BuildReadyCondition) {
			r.buildReady.BuildReady(space.UID, space.CreationTimestamp.Time)
		}
	}()

	ready, ns, err := r.reconcileNamespace(ctx, space)
	if err != nil {
		return ctrl.Result{}, err
	}
	buildReady := metav1.Condition{Type: cfv1alpha1.BuildReadyCondition, Status: metav1.ConditionFalse,
		Reason: cfv1alpha1.NamespaceNotReadyReason, Message: "the space namespace is not ready"}
	if ns != nil {
		if space.Status.Build, buildReady, err = r.discovery.Resolve(ctx, ns); err != nil {
			return ctrl.Result{}, err
		}
	}
	status.Set(space, ready)
	status.Set(space, buildReady)
	if hold := r.waits.hold(space.UID, before, &space.Status, time.Now()); hold > 0 {
		space.Status = *before
		return ctrl.Result{RequeueAfter: hold}, nil
	}
	return requeue(ready, buildReady), nil
}

// reconcileNamespace returns the Ready condition after making the namespace, and the namespace
// once it is ready; unless the space is not in an org namespace, its org is going away, its
// name cannot name a namespace, or its display name is taken.
func (r *SpaceReconciler) reconcileNamespace(ctx context.Context, space *cfv1alpha1.CFSpace) (metav1.Condition, *corev1.Namespace, error) {
	org := &cfv1alpha1.CFOrg{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: r.root, Name: space.Namespace}, org); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return metav1.Condition{}, nil, err
		}
		return notReady(cfv1alpha1.WrongNamespaceReason,
			"spaces live in org namespaces; %s is not one", space.Namespace), nil, nil
	}
	if !org.DeletionTimestamp.IsZero() {
		return notReady(cfv1alpha1.OrgNotReadyReason, "org %s is being deleted", org.Name), nil, nil
	}
	if invalid := cfv1alpha1.ValidateGUID(space.Name); invalid != "" {
		return notReady(cfv1alpha1.InvalidNameReason, "name %q names the space's namespace: %s", space.Name, invalid), nil, nil
	}
	spaces := &cfv1alpha1.CFSpaceList{}
	// Read only, and once per reconcile of every space: the cache's own objects, not copies.
	if err := r.client.List(ctx, spaces, client.InNamespace(space.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return metav1.Condition{}, nil, err
	}
	if owner := cfv1alpha1.DisplayNameOwner(spaces.Items, space.Spec.DisplayName); owner != nil && owner.Name != space.Name {
		return notReady(cfv1alpha1.DuplicateNameReason,
			"space %s of this org already has the name %q", owner.Name, space.Spec.DisplayName), nil, nil
	}
	return spaceNamespace(space).ensure(ctx, r.client)
}

// spaceNamespace is the space's namespace with its labels, which never change. BuildReady is
// not among them: on every change of a namespace, HNC v1.1.0 reconciles each propagated object
// of its ancestors in every namespace below them (ADR 9), so a label that followed BuildReady
// would cost that each time it flipped.
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

// SetupWithManager registers the reconciler: it runs for CFSpaces (not for their status), for
// anchors in org namespaces, for space namespaces, for the org (a space waits for it), for
// every object that the build configuration is resolved from (in the space, or above it for
// every space below), and for the ClusterBuilders made from default Builders placed above.
func (r *SpaceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	notInRoot := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() != r.root })
	b := ctrl.NewControllerManagedBy(mgr).
		Named("cfspace").
		// Not for a change of status alone: that is this reconciler's own write, and would
		// reconcile every space once more for each status it reports.
		For(&cfv1alpha1.CFSpace{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.concurrency}).
		Watches(&hncv1alpha2.SubnamespaceAnchor{}, handler.EnqueueRequestsFromMapFunc(sameName),
			builder.WithPredicates(notInRoot)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.spaceOf)).
		Watches(&cfv1alpha1.CFOrg{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return r.spacesBelow(ctx, o.GetName())
		}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&kpackv1alpha2.ClusterBuilder{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			placedIn, _, _ := strings.Cut(o.GetName(), ".")
			return r.spacesBelow(ctx, placedIn)
		}))
	for _, kind := range buildconfig.Sources() {
		b = b.Watches(kind, handler.EnqueueRequestsFromMapFunc(r.spacesAtOrBelow))
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

// spacesAtOrBelow maps an object to the space whose namespace holds it, or, for an object in
// the root or an org namespace, to every space below.
func (r *SpaceReconciler) spacesAtOrBelow(ctx context.Context, o client.Object) []ctrl.Request {
	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: o.GetNamespace()}, ns); err != nil {
		return nil
	}
	if requests := r.spaceOf(ctx, ns); requests != nil {
		return requests
	}
	return r.spacesBelow(ctx, ns.Name)
}

// spacesBelow maps a namespace to the spaces below it, found by HNC's tree labels.
func (r *SpaceReconciler) spacesBelow(ctx context.Context, namespace string) []ctrl.Request {
	namespaces := &corev1.NamespaceList{}
	if err := r.client.List(ctx, namespaces, client.HasLabels{namespace + hncv1alpha2.LabelTreeDepthSuffix, cfv1alpha1.SpaceGUIDLabel},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var requests []ctrl.Request
	for i := range namespaces.Items {
		if ns := &namespaces.Items[i]; ns.Name != namespace {
			requests = append(requests, r.spaceOf(ctx, ns)...)
		}
	}
	return requests
}
