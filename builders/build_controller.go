package builders

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/apply"
	"code.cloudfoundry.org/cf-hnc/internal/dockerconfig"
	"code.cloudfoundry.org/cf-hnc/internal/status"
	"code.cloudfoundry.org/cf-hnc/propagation"
)

// fieldOwner is the server-side apply field manager of the Images and Builders this package
// writes.
const fieldOwner = client.FieldOwner("cf-hnc-builders")

// appRefIndex indexes CFBuilds by the app they stage.
const appRefIndex = "spec.appRef.name"

// BuildReconciler stages CFBuilds with kpack.
type BuildReconciler struct {
	client   client.Client
	recorder events.EventRecorder
	droplets DropletReader
}

// NewBuildReconciler returns a BuildReconciler that reads droplets' process types with droplets.
func NewBuildReconciler(c client.Client, recorder events.EventRecorder, droplets DropletReader) *BuildReconciler {
	return &BuildReconciler{client: c, recorder: recorder, droplets: droplets}
}

// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfbuilds,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfbuilds/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfapps;cfpackages;cfspaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfapps/finalizers,verbs=update
// +kubebuilder:rbac:groups=kpack.io,resources=images,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=kpack.io,resources=builds,verbs=get;list;watch
// +kubebuilder:rbac:groups=kpack.io,resources=builders,verbs=get;list;watch;create;patch;delete

// Reconcile stages a CFBuild until it succeeds or fails; a finished build is left alone.
func (r *BuildReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	build := &cfv1alpha1.CFBuild{}
	if err := r.client.Get(ctx, req.NamespacedName, build); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if finished(build) {
		return ctrl.Result{}, nil
	}
	original := build.DeepCopy()
	if err := r.stage(ctx, build); err != nil {
		return ctrl.Result{}, err
	}
	build.Status.ObservedGeneration = build.Generation
	return ctrl.Result{}, status.Report(ctx, r.client, r.recorder, build, original, original.Status.Conditions, build.Status.Conditions)
}

// stage moves a build one step on: wait for what it needs, point the app's Image at its
// package and Builder, then follow the kpack Build.
func (r *BuildReconciler) stage(ctx context.Context, build *cfv1alpha1.CFBuild) error {
	space, err := r.spaceOf(ctx, build.Namespace)
	if err != nil {
		return err
	}
	if name := kpackBuildOf(build); name != "" {
		return r.follow(ctx, build, name, space)
	}
	app := &cfv1alpha1.CFApp{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: build.Namespace, Name: build.Spec.AppRef.Name}, app); err != nil {
		if apierrors.IsNotFound(err) {
			waiting(build, cfv1alpha1.WaitingReason, "app %s does not exist", build.Spec.AppRef.Name)
			return nil
		}
		return err
	}
	if active, err := r.activeBuild(ctx, app); err != nil || active != build.Name {
		waiting(build, cfv1alpha1.QueuedReason, "builds of app %s stage one at a time; waiting for build %s", app.Name, active)
		return err
	}
	pkg := &cfv1alpha1.CFPackage{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: build.Namespace, Name: build.Spec.PackageRef.Name}, pkg); err != nil || pkg.Spec.Source.Registry.Image == "" {
		waiting(build, cfv1alpha1.WaitingReason, "package %s is not uploaded", build.Spec.PackageRef.Name)
		return client.IgnoreNotFound(err)
	}
	if ready := meta.FindStatusCondition(space.Status.Conditions, cfv1alpha1.BuildReadyCondition); ready == nil || ready.Status != metav1.ConditionTrue {
		waiting(build, cfv1alpha1.WaitingReason, "space %s cannot build: %s", space.Name, conditionMessage(ready))
		return nil
	}
	builder, err := r.ensureBuilder(ctx, app, effectiveLifecycle(build, app), space.Status.Build)
	if err != nil || !propagation.BuilderReady(builder) {
		waiting(build, cfv1alpha1.BuilderNotReadyReason, "Builder %s is not ready yet", builder.GetName())
		return err
	}
	if err := r.ensureImage(ctx, desiredImage(app, build, pkg, builder.Name, space.Status.Build)); err != nil {
		return err
	}
	if err := r.releaseBuilders(ctx, app, builder.Name); err != nil {
		return err
	}
	kb, err := r.kpackBuildStaging(ctx, build)
	if err != nil || kb == nil {
		setConditions(build,
			metav1.Condition{Type: cfv1alpha1.StagingCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.BuildScheduledReason,
				Message: fmt.Sprintf("waiting for kpack to start a build of Image %s with Builder %s", app.Name, builder.Name)},
			metav1.Condition{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionUnknown, Reason: cfv1alpha1.BuildScheduledReason,
				Message: "staging"})
		return err
	}
	return r.follow(ctx, build, kb.Name, space)
}

// kpackBuildOf returns the kpack Build a CFBuild already follows: the one it found for itself,
// or, for a rebuild, the one kpack started.
func kpackBuildOf(build *cfv1alpha1.CFBuild) string {
	if name := build.Labels[cfv1alpha1.KpackBuildLabel]; name != "" {
		return name
	}
	return build.Status.KpackBuild
}

// follow mirrors a kpack Build into the CFBuild, with the droplet once it succeeded.
func (r *BuildReconciler) follow(ctx context.Context, build *cfv1alpha1.CFBuild, name string, space *cfv1alpha1.CFSpace) error {
	kb := &kpackv1alpha2.Build{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: build.Namespace, Name: name}, kb); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		message := fmt.Sprintf("kpack build %s does not exist any more", name)
		setConditions(build,
			metav1.Condition{Type: cfv1alpha1.StagingCondition, Status: metav1.ConditionFalse, Reason: cfv1alpha1.KpackBuildMissingReason, Message: message},
			metav1.Condition{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: cfv1alpha1.KpackBuildMissingReason, Message: message})
		return nil
	}
	if !followKpackBuild(build, kb) {
		return nil
	}
	config := space.Status.Build
	if config == nil {
		config = &cfv1alpha1.SpaceBuildConfig{}
	}
	keychain, err := r.keychain(ctx, build.Namespace, config)
	if err != nil {
		return err
	}
	processes, err := r.droplets.ProcessTypes(ctx, kb.Status.LatestImage, keychain)
	if err != nil {
		return err
	}
	build.Status.Droplet = droplet(kb, config, processes)
	return nil
}

// keychain holds the space's winning registry credentials.
func (r *BuildReconciler) keychain(ctx context.Context, namespace string, config *cfv1alpha1.SpaceBuildConfig) (dockerconfig.Credentials, error) {
	creds := dockerconfig.Credentials{}
	for _, ref := range config.SecretNames() {
		secret := &corev1.Secret{}
		if err := r.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, secret); err != nil {
			return nil, err
		}
		parsed, err := dockerconfig.Parse(secret)
		if err != nil {
			return nil, fmt.Errorf("Secret %s: %w", ref.Name, err)
		}
		for host, auth := range parsed {
			creds[host] = auth
		}
	}
	return creds, nil
}

// spaceOf returns the CFSpace of a space namespace; its status holds the build configuration.
func (r *BuildReconciler) spaceOf(ctx context.Context, namespace string) (*cfv1alpha1.CFSpace, error) {
	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return nil, err
	}
	space := &cfv1alpha1.CFSpace{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: ns.Labels[cfv1alpha1.OrgGUIDLabel], Name: namespace}, space)
	if apierrors.IsNotFound(err) {
		space.Name = namespace
		return space, nil
	}
	return space, err
}

// activeBuild returns the CFBuild of an app that stages now: the oldest that has not finished.
// kpack builds an Image's builds one after the other; so does this.
func (r *BuildReconciler) activeBuild(ctx context.Context, app *cfv1alpha1.CFApp) (string, error) {
	builds := &cfv1alpha1.CFBuildList{}
	if err := r.client.List(ctx, builds, client.InNamespace(app.Namespace), client.MatchingFields{appRefIndex: app.Name}); err != nil {
		return "", err
	}
	var pending []cfv1alpha1.CFBuild
	for _, b := range builds.Items {
		if _, rebuild := b.Labels[cfv1alpha1.RebuildOfLabel]; !rebuild && !finished(&b) && b.DeletionTimestamp.IsZero() {
			pending = append(pending, b)
		}
	}
	if len(pending) == 0 {
		return "", nil
	}
	return slices.MinFunc(pending, func(a, b cfv1alpha1.CFBuild) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	}).Name, nil
}

// ensureImage applies the app's Image when it differs from what the build needs.
func (r *BuildReconciler) ensureImage(ctx context.Context, desired *kpackv1alpha2.Image) error {
	current := &kpackv1alpha2.Image{}
	err := r.client.Get(ctx, client.ObjectKeyFromObject(desired), current)
	if err == nil && equality.Semantic.DeepEqual(current.Spec, desired.Spec) {
		return nil
	}
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	return apply.Object(ctx, r.client, desired, fieldOwner)
}

// kpackBuildStaging returns the kpack Build that stages a CFBuild: the first one kpack made
// with the CFBuild's name in its environment; later ones are rebuilds.
func (r *BuildReconciler) kpackBuildStaging(ctx context.Context, build *cfv1alpha1.CFBuild) (*kpackv1alpha2.Build, error) {
	builds := &kpackv1alpha2.BuildList{}
	if err := r.client.List(ctx, builds, client.InNamespace(build.Namespace),
		client.MatchingLabels{kpackv1alpha2.ImageLabel: build.Spec.AppRef.Name}); err != nil {
		return nil, err
	}
	var first *kpackv1alpha2.Build
	for i := range builds.Items {
		kb := &builds.Items[i]
		if stagedBuild(kb) == build.Name && (first == nil || buildNumber(kb) < buildNumber(first)) {
			first = kb
		}
	}
	return first, nil
}

// buildNumber is kpack's number of a build of an Image.
func buildNumber(kb *kpackv1alpha2.Build) int {
	n, _ := strconv.Atoi(kb.Labels[kpackv1alpha2.BuildNumberLabel])
	return n
}

func conditionMessage(c *metav1.Condition) string {
	if c == nil {
		return "its build readiness is not known yet"
	}
	return c.Message
}

// SetupWithManager registers the reconciler: it runs for CFBuilds, and for whatever a waiting
// build waits for in its namespace (its space, its package, a Builder, another build of its
// app), and for kpack Builds.
func (r *BuildReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &cfv1alpha1.CFBuild{}, appRefIndex,
		func(o client.Object) []string { return []string{o.(*cfv1alpha1.CFBuild).Spec.AppRef.Name} }); err != nil {
		return err
	}
	unfinishedInNamespace := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
		return r.unfinishedBuilds(ctx, o.GetNamespace())
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("cfbuild").
		For(&cfv1alpha1.CFBuild{}).
		Watches(&cfv1alpha1.CFBuild{}, unfinishedInNamespace).
		Watches(&cfv1alpha1.CFPackage{}, unfinishedInNamespace).
		Watches(&kpackv1alpha2.Builder{}, unfinishedInNamespace).
		Watches(&cfv1alpha1.CFSpace{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return r.unfinishedBuilds(ctx, o.GetName())
		})).
		Watches(&kpackv1alpha2.Build{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			kb := o.(*kpackv1alpha2.Build)
			// The CFBuild it stages, or the rebuild CFBuild named after it.
			requests := []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: kb.Namespace, Name: kb.Name}}}
			if guid := stagedBuild(kb); guid != "" {
				requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: kb.Namespace, Name: guid}})
			}
			return requests
		})).
		Complete(r)
}

// unfinishedBuilds maps an event in a namespace to the CFBuilds there that have not finished.
func (r *BuildReconciler) unfinishedBuilds(ctx context.Context, namespace string) []ctrl.Request {
	builds := &cfv1alpha1.CFBuildList{}
	if err := r.client.List(ctx, builds, client.InNamespace(namespace)); err != nil {
		return nil
	}
	var requests []ctrl.Request
	for i := range builds.Items {
		if !finished(&builds.Items[i]) {
			requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&builds.Items[i])})
		}
	}
	return requests
}
