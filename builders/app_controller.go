package builders

import (
	"context"
	"errors"
	"fmt"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// imageBuilderIndex indexes kpack Images by the Builder they build with (builderKey).
const imageBuilderIndex = "spec.builder"

// AppReconciler keeps every app on the newest droplet it may run. A stack fix (the running
// droplet on its stack's latest run image, nothing else changed) is deployed under every
// policy, and the reconciler rebases the running droplet itself when kpack's Image rebases
// another one or none. An upgrade (another stack, other buildpacks, another lifecycle) is
// deployed as the org's BuildpackUpgradePolicy says. An app that cannot be moved says why.
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
// +kubebuilder:rbac:groups=kpack.io,resources=builds,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=kpack.io,resources=images;builders;clusterbuilders,verbs=get;list;watch

// Reconcile moves the app to the droplet it should run, rebases its droplet if kpack will
// not, and says where its upgrades stand.
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
	if err := r.reportTakenRebuild(ctx, in, &decision); err != nil {
		return ctrl.Result{}, err
	}
	status.Set(app, decision.condition)
	app.Status.HeldDropletRef, app.Status.Droplet = decision.held, decision.droplet
	if decision.rebase {
		if err := r.rebase(ctx, app, in); err != nil {
			return ctrl.Result{}, err
		}
	}
	if decision.moveTo == nil {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.move(ctx, app, in.current, decision.moveTo, decision.why)
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
	if in.lineage, err = r.lineage(ctx, in.current); err != nil {
		return in, err
	}
	if in.policy, err = r.upgradePolicy(ctx, app.Namespace); err != nil {
		return in, err
	}
	image, err := get(ctx, r.client, app.Namespace, app.Name, &kpackv1alpha2.Image{})
	if image == nil || err != nil {
		return in, err
	}
	if in.builder, err = r.builderOf(ctx, image); err != nil {
		return in, err
	}
	builds := &kpackv1alpha2.BuildList{}
	if err := r.client.List(ctx, builds, client.InNamespace(app.Namespace), client.MatchingLabels{kpackv1alpha2.ImageLabel: image.Name}); err != nil {
		return in, err
	}
	in.kpackLatest = latestKpackBuild(builds.Items)
	return in, nil
}

// reportTakenRebuild makes the app say so when a rebuild cannot become a droplet because
// another CFBuild holds its name, which the rebuild reconciler leaves alone (checkTaken): the
// rebuild that its stack fix waits for, or kpack's latest build of its Image. Else the app
// would say Rebuilding, or UpToDate, for ever, and the count of apps by reason would hide it.
func (r *AppReconciler) reportTakenRebuild(ctx context.Context, in dropletInputs, d *dropletDecision) error {
	var rebuilds []string
	if d.droplet != nil && d.droplet.Rebuild != nil {
		rebuilds = append(rebuilds, d.droplet.Rebuild.Name)
	}
	if in.kpackLatest != nil {
		rebuilds = append(rebuilds, in.kpackLatest.Name)
	}
	for _, name := range rebuilds {
		taken, err := rebuildNameTaken(ctx, r.client, in.app.Namespace, name)
		if err != nil {
			return err
		}
		if taken {
			d.condition = dropletCondition(metav1.ConditionFalse, cfv1alpha1.RebuildFailedReason,
				"kpack build %s rebuilds the app's droplet, but a CFBuild that cf-hnc did not make has the name %s of its rebuild; delete CFBuild %s and cf-hnc makes the rebuild",
				name, name, name)
			return nil
		}
	}
	return nil
}

// rebuildNameTaken says whether the kpack Build of this name rebuilds a droplet while a CFBuild
// that cf-hnc did not mark as its rebuild holds the rebuild's name. A CFBuild marked as the
// rebuild is cf-hnc's, or one that the build reconciler fails as NotARebuild: only the manager
// may mark a CFBuild so (config/policies/rebuilds.yaml).
func rebuildNameTaken(ctx context.Context, c client.Reader, namespace, name string) (bool, error) {
	holder, err := get(ctx, c, namespace, name, &cfv1alpha1.CFBuild{})
	if holder == nil || holder.Labels[cfv1alpha1.KpackBuildLabel] == name || err != nil {
		return false, err
	}
	kb, err := get(ctx, c, namespace, name, &kpackv1alpha2.Build{})
	if kb == nil || err != nil {
		return false, err
	}
	rebuilt, err := rebuiltBuilds(ctx, c, kb)
	return len(rebuilt) > 0, err
}

// lineage returns the droplets of a droplet's package: the lineage's first CFBuild and every
// rebuild of it; and every rebase of the droplet's image, whichever lineage it was filed under
// (a restage with nothing changed stages the same image again, in a lineage of its own).
func (r *AppReconciler) lineage(ctx context.Context, current *cfv1alpha1.CFBuild) ([]cfv1alpha1.CFBuild, error) {
	origin := lineageOf(current)
	builds := &cfv1alpha1.CFBuildList{}
	if err := r.client.List(ctx, builds, client.InNamespace(current.Namespace)); err != nil {
		return nil, err
	}
	var lineage []cfv1alpha1.CFBuild
	for _, b := range builds.Items {
		rebasesCurrent := b.Status.Rebuild != nil && current.Status.Droplet != nil && sameImage(b.Status.Rebuild.Image, current.Status.Droplet.Registry.Image)
		if b.Spec.AppRef.Name == current.Spec.AppRef.Name && (b.Name == origin || b.Labels[cfv1alpha1.RebuildOfLabel] == origin || rebasesCurrent) {
			lineage = append(lineage, b)
		}
	}
	return lineage, nil
}

// lineageOf is the first CFBuild of a droplet's lineage: the build that staged its package.
func lineageOf(b *cfv1alpha1.CFBuild) string {
	if origin := b.Labels[cfv1alpha1.RebuildOfLabel]; origin != "" {
		return origin
	}
	return b.Name
}

// builderOf is what the Builder of an Image gives now, or nil if that is not known.
func (r *AppReconciler) builderOf(ctx context.Context, image *kpackv1alpha2.Image) (*builderStack, error) {
	ref := image.Spec.Builder
	switch ref.Kind {
	case kpackv1alpha2.ClusterBuilderKind:
		cb, err := get(ctx, r.client, "", ref.Name, &kpackv1alpha2.ClusterBuilder{})
		if cb == nil || err != nil {
			return nil, err
		}
		return builderStackOf(ref.Kind, ref.Name, cb.Generation, &cb.Status), nil
	case kpackv1alpha2.BuilderKind:
		b, err := get(ctx, r.client, image.Namespace, ref.Name, &kpackv1alpha2.Builder{})
		if b == nil || err != nil {
			return nil, err
		}
		return builderStackOf(ref.Kind, ref.Name, b.Generation, &b.Status), nil
	}
	return nil, nil
}

// rebase starts cf-hnc's own rebase of the app's droplet onto its Builder's run image.
func (r *AppReconciler) rebase(ctx context.Context, app *cfv1alpha1.CFApp, in dropletInputs) error {
	image, err := get(ctx, r.client, app.Namespace, app.Name, &kpackv1alpha2.Image{})
	if image == nil || err != nil {
		return err
	}
	pkg, err := get(ctx, r.client, app.Namespace, in.current.Spec.PackageRef.Name, &cfv1alpha1.CFPackage{})
	if err != nil {
		return err
	}
	build := desiredRebase(app, in.current, pkg, image, in.builder)
	if err := r.client.Create(ctx, build); apierrors.IsAlreadyExists(err) {
		return nil
	} else if err != nil {
		return err
	}
	r.recorder.Eventf(app, build, corev1.EventTypeNormal, cfv1alpha1.RebaseStartedReason, "Rebase",
		"rebasing droplet %s onto %s, the latest run image of stack %s (kpack build %s)",
		in.current.Name, in.builder.runImage, in.builder.stack, build.Name)
	return nil
}

// move points the app at another droplet and says why.
func (r *AppReconciler) move(ctx context.Context, app *cfv1alpha1.CFApp, from, to *cfv1alpha1.CFBuild, why string) error {
	patch := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
	app.Spec.CurrentDropletRef.Name = to.Name
	reported := app.Status.DeepCopy()
	if err := r.client.Patch(ctx, app, patch); err != nil {
		return err
	}
	app.Status = *reported
	r.recorder.Eventf(app, to, corev1.EventTypeNormal, cfv1alpha1.DropletUpgradedReason, "Upgrade",
		"moved from droplet %s to %s, %s", from.Name, to.Name, why)
	return nil
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

// builderKey is how imageBuilderIndex names a Builder or ClusterBuilder.
func builderKey(kind, namespace, name string) string {
	if kind == kpackv1alpha2.ClusterBuilderKind {
		namespace = ""
	}
	return kind + "/" + namespace + "/" + name
}

// SetupWithManager registers the reconciler: it runs for CFApps, for their CFBuilds, kpack
// Images and kpack Builds, for every app of an org whose upgrade policy changed (a held droplet
// may now be deployed), and for every app whose Image builds with a Builder or ClusterBuilder
// that changed (a new run image is a stack fix to roll out).
func (r *AppReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := registerMetrics(mgr.GetClient()); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &kpackv1alpha2.Image{}, imageBuilderIndex, func(o client.Object) []string {
		image := o.(*kpackv1alpha2.Image)
		return []string{builderKey(image.Spec.Builder.Kind, image.Namespace, image.Spec.Builder.Name)}
	}); err != nil {
		return err
	}
	appOf := func(name func(client.Object) string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			if app := name(o); app != "" {
				return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: app}}}
			}
			return nil
		})
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("cfapp").
		For(&cfv1alpha1.CFApp{}).
		Watches(&cfv1alpha1.CFBuild{}, appOf(func(o client.Object) string { return o.(*cfv1alpha1.CFBuild).Spec.AppRef.Name })).
		Watches(&kpackv1alpha2.Image{}, appOf(client.Object.GetName)).
		Watches(&kpackv1alpha2.Build{}, appOf(func(o client.Object) string {
			if app := o.GetLabels()[cfv1alpha1.AppLabel]; app != "" {
				return app
			}
			return o.GetLabels()[kpackv1alpha2.ImageLabel]
		})).
		Watches(&kpackv1alpha2.ClusterBuilder{}, handler.EnqueueRequestsFromMapFunc(r.appsBuildingWith)).
		Watches(&kpackv1alpha2.Builder{}, handler.EnqueueRequestsFromMapFunc(r.appsBuildingWith)).
		Watches(&cfv1alpha1.CFOrg{}, handler.EnqueueRequestsFromMapFunc(r.appsOfOrg),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// appsBuildingWith maps a Builder or ClusterBuilder to the apps whose Image builds with it.
func (r *AppReconciler) appsBuildingWith(ctx context.Context, o client.Object) []ctrl.Request {
	kind := kpackv1alpha2.BuilderKind
	if _, ok := o.(*kpackv1alpha2.ClusterBuilder); ok {
		kind = kpackv1alpha2.ClusterBuilderKind
	}
	images := &kpackv1alpha2.ImageList{}
	if err := r.client.List(ctx, images, client.MatchingFields{imageBuilderIndex: builderKey(kind, o.GetNamespace(), o.GetName())}); err != nil {
		return nil
	}
	requests := make([]ctrl.Request, 0, len(images.Items))
	for _, image := range images.Items {
		requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&image)})
	}
	return requests
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
