package upgrades

import (
	"context"
	"errors"
	"fmt"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/status"
	"code.cloudfoundry.org/cf-hnc/staging"
)

// imageBuilderIndex indexes kpack Images by the Builder they build with (builderKey).
const imageBuilderIndex = "spec.builder"

// DropletReconciler keeps every app on the newest droplet it may run. A stack fix (the running
// droplet on its stack's latest run image, nothing else changed) is deployed under every
// policy, and the reconciler rebases the running droplet itself when kpack's Image rebases
// another one or none. An upgrade (another stack, other buildpacks, another lifecycle) is
// deployed as the org's BuildpackUpgradePolicy says. An app that cannot be moved says why.
type DropletReconciler struct {
	client   client.Client
	reporter *status.Reporter
	recorder events.EventRecorder
	root     string
}

// NewDropletReconciler returns a DropletReconciler for orgs in the root namespace.
func NewDropletReconciler(c client.Client, recorder events.EventRecorder, root string) *DropletReconciler {
	return &DropletReconciler{client: c, reporter: status.NewReporter(c, recorder), recorder: recorder, root: root}
}

// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfapps,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfapps/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cforgs,verbs=get;list;watch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfbuilds;cfpackages;cfspaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=kpack.io,resources=builds,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=kpack.io,resources=images;builders;clusterbuilders,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile moves the app to the droplet it should run, rebases its droplet if kpack will
// not, and says where its upgrades stand.
func (r *DropletReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
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
	app.Status.HeldDropletRef, app.Status.Droplet = decision.held, decision.droplet
	return ctrl.Result{}, r.act(ctx, app, in, decision)
}

// observe reads what the droplet an app should run depends on: its current droplet and that
// droplet's lineage, its org's policy, its kpack Image with the Builder it builds with and
// kpack's latest Build of it, the current droplet's package, and which names of the rebuilds
// the decision may wait for are held by CFBuilds that are not those rebuilds.
func (r *DropletReconciler) observe(ctx context.Context, app *cfv1alpha1.CFApp) (dropletInputs, error) {
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
	if in.pkg, err = get(ctx, r.client, app.Namespace, in.current.Spec.PackageRef.Name, &cfv1alpha1.CFPackage{}); err != nil {
		return in, err
	}
	if in.image, err = get(ctx, r.client, app.Namespace, app.Name, &kpackv1alpha2.Image{}); in.image == nil || err != nil {
		return in, err
	}
	if in.builder, err = r.builderOf(ctx, in.image); err != nil {
		return in, err
	}
	builds := &kpackv1alpha2.BuildList{}
	if err := r.client.List(ctx, builds, client.InNamespace(app.Namespace), client.MatchingLabels{kpackv1alpha2.ImageLabel: in.image.Name}); err != nil {
		return in, err
	}
	in.kpackLatest = latestKpackBuild(builds.Items)
	in.takenRebuilds, err = r.takenRebuilds(ctx, in)
	return in, err
}

// takenRebuilds are the names, among the rebuilds that the app's stack fix may wait for (kpack's
// latest build of its Image, cf-hnc's own rebase of its droplet), that a CFBuild holds which is
// not that rebuild: the rebuild reconciler cannot make the rebuild (checkTaken), and the app
// must say so rather than say Rebuilding, or UpToDate, for ever.
func (r *DropletReconciler) takenRebuilds(ctx context.Context, in dropletInputs) (sets.Set[string], error) {
	candidates := sets.New[string]()
	if in.kpackLatest != nil {
		candidates.Insert(in.kpackLatest.Name)
	}
	if running := in.current.StagedDroplet(); running != nil && in.builder != nil {
		candidates.Insert(rebaseName(in.app.Name, running.Registry.Image, in.builder.runImage))
	}
	taken := sets.New[string]()
	for name := range candidates {
		held, err := rebuildNameTaken(ctx, r.client, in.app.Namespace, name)
		if err != nil {
			return nil, err
		}
		if held {
			taken.Insert(name)
		}
	}
	return taken, nil
}

// act starts the rebase and moves the app as the decision says.
func (r *DropletReconciler) act(ctx context.Context, app *cfv1alpha1.CFApp, in dropletInputs, decision dropletDecision) error {
	if decision.rebase != nil {
		if err := r.rebase(ctx, app, in.current, decision.rebase); err != nil {
			return err
		}
	}
	if decision.moveTo == nil {
		return nil
	}
	return r.move(ctx, app, in.current, decision.moveTo, decision.why)
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
	rebuilt, err := staging.RebuiltBuilds(ctx, c, kb)
	return len(rebuilt) > 0, err
}

// lineage returns the droplets of a droplet's package: the lineage's first CFBuild and every
// rebuild of it; and every rebase of the droplet's image, whichever lineage it was filed under
// (a restage with nothing changed stages the same image again, in a lineage of its own).
func (r *DropletReconciler) lineage(ctx context.Context, current *cfv1alpha1.CFBuild) ([]cfv1alpha1.CFBuild, error) {
	origin := staging.LineageOf(current)
	builds := &cfv1alpha1.CFBuildList{}
	if err := r.client.List(ctx, builds, client.InNamespace(current.Namespace)); err != nil {
		return nil, err
	}
	var lineage []cfv1alpha1.CFBuild
	for _, b := range builds.Items {
		rebasesCurrent := b.Status.Rebuild != nil && current.Status.Droplet != nil && cfv1alpha1.SameImage(b.Status.Rebuild.Image, current.Status.Droplet.Registry.Image)
		if b.Spec.AppRef.Name == current.Spec.AppRef.Name && (b.Name == origin || b.Labels[cfv1alpha1.RebuildOfLabel] == origin || rebasesCurrent) {
			lineage = append(lineage, b)
		}
	}
	return lineage, nil
}

// builderOf is what the Builder of an Image gives now, or nil if that is not known.
func (r *DropletReconciler) builderOf(ctx context.Context, image *kpackv1alpha2.Image) (*builderStack, error) {
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

// rebase starts cf-hnc's own rebase of the app's droplet, the kpack Build the decision made.
func (r *DropletReconciler) rebase(ctx context.Context, app *cfv1alpha1.CFApp, current *cfv1alpha1.CFBuild, build *kpackv1alpha2.Build) error {
	if err := r.client.Create(ctx, build); apierrors.IsAlreadyExists(err) {
		return nil
	} else if err != nil {
		return err
	}
	r.recorder.Eventf(app, build, corev1.EventTypeNormal, cfv1alpha1.RebaseStartedReason, "Rebase",
		"rebasing droplet %s onto %s, the latest run image of stack %s (kpack build %s)",
		current.Name, build.Spec.RunImage.Image, build.Spec.LastBuild.StackId, build.Name)
	return nil
}

// move points the app at another droplet and says why. It patches a copy: the app keeps the
// status this reconcile computed, which the deferred report writes.
func (r *DropletReconciler) move(ctx context.Context, app *cfv1alpha1.CFApp, from, to *cfv1alpha1.CFBuild, why string) error {
	moved := app.DeepCopy()
	patch := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
	moved.Spec.CurrentDropletRef.Name = to.Name
	if err := r.client.Patch(ctx, moved, patch); err != nil {
		return err
	}
	r.recorder.Eventf(app, to, corev1.EventTypeNormal, cfv1alpha1.DropletUpgradedReason, "Upgrade",
		"moved from droplet %s to %s, %s", from.Name, to.Name, why)
	return nil
}

// upgradePolicy is the BuildpackUpgradePolicy of the org of a space namespace.
func (r *DropletReconciler) upgradePolicy(ctx context.Context, namespace string) (cfv1alpha1.BuildpackUpgradePolicy, error) {
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

// SetupWithManager registers the reconciler and the gauges of apps: it runs for CFApps, for
// their CFBuilds, kpack Images and kpack Builds, for every app of an org whose upgrade policy
// changed (a held droplet may now be deployed), and for every app whose Image builds with a
// Builder or ClusterBuilder that changed (a new run image is a stack fix to roll out).
func (r *DropletReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := registerMetrics(mgr.GetClient()); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &kpackv1alpha2.Image{}, imageBuilderIndex, func(o client.Object) []string {
		image := o.(*kpackv1alpha2.Image)
		return []string{builderKey(image.Spec.Builder.Kind, image.Namespace, image.Spec.Builder.Name)}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("droplet").
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

// appOf maps an object to the app that name says it belongs to, in its namespace.
func appOf(name func(client.Object) string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
		if app := name(o); app != "" {
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: app}}}
		}
		return nil
	})
}

// appsBuildingWith maps a Builder or ClusterBuilder to the apps whose Image builds with it.
func (r *DropletReconciler) appsBuildingWith(ctx context.Context, o client.Object) []ctrl.Request {
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
func (r *DropletReconciler) appsOfOrg(ctx context.Context, org client.Object) []ctrl.Request {
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

// get reads an object, or returns nil if it does not exist.
func get[T client.Object](ctx context.Context, c client.Reader, namespace, name string, obj T) (T, error) {
	var none T
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return none, client.IgnoreNotFound(err)
	}
	return obj, nil
}
