package builders

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/status"
)

// stackOnly is kpack's reason for a rebuild that only rebases the droplet on a new run image.
const stackOnly = "STACK"

// AppReconciler moves an app to the newest droplet that kpack rebuilt from the app's current
// one: always for a new stack run image (a base-image fix), and for new buildpacks or a new
// lifecycle as its org's BuildpackUpgradePolicy says. A failed rebuild never moves an app.
type AppReconciler struct {
	client   client.Client
	reporter *status.Reporter
	recorder events.EventRecorder
	root     string
}

// NewAppReconciler returns an AppReconciler for orgs in the root namespace.
func NewAppReconciler(c client.Client, recorder events.EventRecorder, root string) *AppReconciler {
	return &AppReconciler{client: c, reporter: status.NewReporter(c, recorder), recorder: recorder, root: root}
}

// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfapps,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfapps/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cforgs,verbs=get;list;watch

// Reconcile moves the app to its newest rebuilt droplet, or says why it stays where it is.
func (r *AppReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	app := &cfv1alpha1.CFApp{}
	if err := r.client.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	report := r.reporter.Track(app)
	defer func() { err = errors.Join(err, report(ctx)) }()

	in, err := r.observe(ctx, app)
	if err != nil {
		return ctrl.Result{}, err
	}
	decision := decideDroplet(in)
	status.Set(app, decision.condition)
	app.Status.HeldDropletRef = decision.held
	if decision.moveTo == nil {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.move(ctx, app, in.current, decision.moveTo)
}

// dropletInputs is what the droplet an app should run depends on, as observed.
type dropletInputs struct {
	app *cfv1alpha1.CFApp
	// current is the CFBuild whose droplet the app runs; nil if it has none or it is gone.
	current *cfv1alpha1.CFBuild
	// newest is the newest rebuild of the current droplet's lineage, newer than it; nil if none.
	newest *cfv1alpha1.CFBuild
	// newestKpackBuild is the kpack Build that newest says it follows; nil if there is none.
	newestKpackBuild *kpackv1alpha2.Build
	policy           cfv1alpha1.BuildpackUpgradePolicy
}

// dropletDecision is what the app reconciler decides: the app's DropletCurrent condition, the
// droplet held for a restage, and the droplet to move the app to, if any.
type dropletDecision struct {
	condition metav1.Condition
	held      *corev1.LocalObjectReference
	moveTo    *cfv1alpha1.CFBuild
}

func (r *AppReconciler) observe(ctx context.Context, app *cfv1alpha1.CFApp) (dropletInputs, error) {
	in := dropletInputs{app: app}
	if app.Spec.CurrentDropletRef.Name == "" {
		return in, nil
	}
	var err error
	if in.current, err = get(ctx, r.client, app.Namespace, app.Spec.CurrentDropletRef.Name, &cfv1alpha1.CFBuild{}); in.current == nil || err != nil {
		return in, err
	}
	if in.newest, err = r.newestRebuild(ctx, in.current); in.newest == nil || err != nil {
		return in, err
	}
	if in.newestKpackBuild, err = get(ctx, r.client, app.Namespace, in.newest.Labels[cfv1alpha1.KpackBuildLabel], &kpackv1alpha2.Build{}); err != nil {
		return in, err
	}
	in.policy, err = r.upgradePolicy(ctx, app.Namespace)
	return in, err
}

// decideDroplet decides whether the app moves to the newest rebuild of its droplet.
func decideDroplet(in dropletInputs) dropletDecision {
	switch {
	case in.app.Spec.CurrentDropletRef.Name == "":
		return dropletDecision{condition: dropletCondition(metav1.ConditionUnknown, cfv1alpha1.NoDropletReason, "the app has no droplet yet")}
	case in.current == nil:
		return dropletDecision{condition: dropletCondition(metav1.ConditionFalse, cfv1alpha1.DropletMissingReason,
			"the app's droplet, CFBuild %s, does not exist", in.app.Spec.CurrentDropletRef.Name)}
	case in.newest == nil || !genuineRebuild(in.newest, in.newestKpackBuild):
		return dropletDecision{condition: dropletCondition(metav1.ConditionTrue, cfv1alpha1.UpToDateReason, "the app runs its newest droplet")}
	}
	reason := in.newest.Annotations[cfv1alpha1.RebuildReasonAnnotation]
	succeeded := meta.FindStatusCondition(in.newest.Status.Conditions, cfv1alpha1.SucceededCondition)
	switch {
	case succeeded == nil || succeeded.Status == metav1.ConditionUnknown:
		return dropletDecision{condition: dropletCondition(metav1.ConditionTrue, cfv1alpha1.RebuildingReason,
			"kpack rebuilds the droplet because of %s (CFBuild %s)", reason, in.newest.Name)}
	case succeeded.Status == metav1.ConditionFalse:
		return dropletDecision{condition: dropletCondition(metav1.ConditionFalse, cfv1alpha1.RebuildFailedReason,
			"the rebuild because of %s failed, the app keeps droplet %s: %s", reason, in.current.Name, succeeded.Message)}
	case reason != stackOnly && in.policy != cfv1alpha1.AutomaticUpgrades:
		return dropletDecision{
			held: &corev1.LocalObjectReference{Name: in.newest.Name},
			condition: dropletCondition(metav1.ConditionFalse, cfv1alpha1.UpgradeHeldReason,
				"droplet %s was rebuilt because of %s and is held by the org's %s policy; restage (set spec.currentDropletRef to %s) to run it",
				in.newest.Name, reason, in.policy, in.newest.Name),
		}
	}
	return dropletDecision{
		moveTo:    in.newest,
		condition: dropletCondition(metav1.ConditionTrue, cfv1alpha1.UpToDateReason, "the app runs its newest droplet"),
	}
}

// genuineRebuild says whether a rebuild CFBuild is what cf-hnc made of a build kpack started:
// named after that kpack Build, which stages its lineage with the number and reasons it
// carries. Admission refuses these labels from anyone but cf-hnc; this holds even without it.
func genuineRebuild(rebuild *cfv1alpha1.CFBuild, kb *kpackv1alpha2.Build) bool {
	return kb != nil &&
		rebuild.Name == kb.Name &&
		rebuild.Labels[cfv1alpha1.KpackBuildLabel] == kb.Name &&
		rebuild.Labels[cfv1alpha1.RebuildOfLabel] == stagedBuild(kb) &&
		rebuild.Labels[cfv1alpha1.KpackBuildNumberLabel] == kb.Labels[kpackv1alpha2.BuildNumberLabel] &&
		rebuild.Annotations[cfv1alpha1.RebuildReasonAnnotation] == kb.Annotations[kpackv1alpha2.BuildReasonAnnotation]
}

// move points the app at the rebuilt droplet and says why.
func (r *AppReconciler) move(ctx context.Context, app *cfv1alpha1.CFApp, from, to *cfv1alpha1.CFBuild) error {
	patch := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
	app.Spec.CurrentDropletRef.Name = to.Name
	reported := app.Status.DeepCopy()
	if err := r.client.Patch(ctx, app, patch); err != nil {
		return err
	}
	app.Status = *reported
	r.recorder.Eventf(app, to, corev1.EventTypeNormal, cfv1alpha1.DropletUpgradedReason, "Upgrade",
		"moved from droplet %s to %s, which kpack rebuilt because of %s", from.Name, to.Name, to.Annotations[cfv1alpha1.RebuildReasonAnnotation])
	return nil
}

// newestRebuild returns the newest rebuild of the current droplet's lineage that is newer
// than the current droplet, or nil.
func (r *AppReconciler) newestRebuild(ctx context.Context, current *cfv1alpha1.CFBuild) (*cfv1alpha1.CFBuild, error) {
	origin := current.Labels[cfv1alpha1.RebuildOfLabel]
	if origin == "" {
		origin = current.Name
	}
	rebuilds := &cfv1alpha1.CFBuildList{}
	if err := r.client.List(ctx, rebuilds, client.InNamespace(current.Namespace), client.MatchingLabels{cfv1alpha1.RebuildOfLabel: origin}); err != nil {
		return nil, err
	}
	newer := slices.DeleteFunc(rebuilds.Items, func(b cfv1alpha1.CFBuild) bool { return rebuildNumber(&b) <= rebuildNumber(current) })
	if len(newer) == 0 {
		return nil, nil
	}
	newest := slices.MaxFunc(newer, func(a, b cfv1alpha1.CFBuild) int { return rebuildNumber(&a) - rebuildNumber(&b) })
	return &newest, nil
}

// rebuildNumber orders the droplets of a lineage: the origin is 0, a rebuild has kpack's number.
func rebuildNumber(b *cfv1alpha1.CFBuild) int {
	n, _ := strconv.Atoi(b.Labels[cfv1alpha1.KpackBuildNumberLabel])
	return n
}

// upgradePolicy is the BuildpackUpgradePolicy of the org of a space namespace.
func (r *AppReconciler) upgradePolicy(ctx context.Context, namespace string) (cfv1alpha1.BuildpackUpgradePolicy, error) {
	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return "", err
	}
	org := &cfv1alpha1.CFOrg{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: r.root, Name: ns.Labels[cfv1alpha1.OrgGUIDLabel]}, org); err != nil {
		return "", fmt.Errorf("the org of space %s: %w", namespace, err)
	}
	if org.Spec.BuildpackUpgradePolicy == "" {
		return cfv1alpha1.HeldUpgrades, nil
	}
	return org.Spec.BuildpackUpgradePolicy, nil
}

func dropletCondition(s metav1.ConditionStatus, reason, format string, args ...any) metav1.Condition {
	return metav1.Condition{Type: cfv1alpha1.DropletCurrentCondition, Status: s, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// SetupWithManager registers the reconciler: it runs for CFApps, for their CFBuilds, and for
// every app of an org whose upgrade policy changed (a held droplet may now be deployed).
func (r *AppReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("cfapp").
		For(&cfv1alpha1.CFApp{}).
		Watches(&cfv1alpha1.CFBuild{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			build := o.(*cfv1alpha1.CFBuild)
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: build.Namespace, Name: build.Spec.AppRef.Name}}}
		})).
		Watches(&cfv1alpha1.CFOrg{}, handler.EnqueueRequestsFromMapFunc(r.appsOfOrg),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// appsOfOrg maps an org to the apps of all its spaces.
func (r *AppReconciler) appsOfOrg(ctx context.Context, org client.Object) []ctrl.Request {
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := r.client.List(ctx, spaces, client.InNamespace(org.GetName())); err != nil {
		return nil
	}
	var requests []ctrl.Request
	for _, space := range spaces.Items {
		apps := &cfv1alpha1.CFAppList{}
		if err := r.client.List(ctx, apps, client.InNamespace(space.Name)); err != nil {
			return nil
		}
		for _, app := range apps.Items {
			requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&app)})
		}
	}
	return requests
}
