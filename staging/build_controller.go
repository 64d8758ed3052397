package staging

import (
	"cmp"
	"context"
	"errors"
	"slices"

	kauth "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/builders"
	"code.cloudfoundry.org/cf-hnc/internal/apply"
	"code.cloudfoundry.org/cf-hnc/internal/status"
)

// fieldOwner is the server-side apply field manager of the Images and dedicated Builders that
// staging writes; the name they have had since staging lived in package builders.
const fieldOwner = client.FieldOwner("cf-hnc-builders")

// waitingIndex indexes the CFBuilds that have not finished by what they may wait for
// (waitingOn): their app (which stages one build at a time), their package and their space.
// An event maps to the builds that wait for the object that changed, not to every build of its
// namespace: a namespace full of waiting builds costs nothing when something else changes.
const waitingIndex = "waitingOn"

// onSpace is the key under which waitingIndex holds every unfinished build of a namespace: all
// of them wait for their space's build configuration.
const onSpace = "CFSpace"

// waitingOn is the key under which waitingIndex holds the unfinished builds that wait for an
// object of a kind ("CFApp", "CFPackage").
func waitingOn(kind, name string) string { return kind + "/" + name }

// waitingKeys are the keys of a CFBuild in waitingIndex: none once it finished.
func waitingKeys(o client.Object) []string {
	build := o.(*cfv1alpha1.CFBuild)
	if build.Finished() {
		return nil
	}
	return []string{onSpace, waitingOn("CFApp", build.Spec.AppRef.Name), waitingOn("CFPackage", build.Spec.PackageRef.Name)}
}

// BuildReconciler stages CFBuilds with kpack.
type BuildReconciler struct {
	client client.Client
	// uncached reads the pod of a failed kpack Build, which the cache holds without its
	// containers' statuses.
	uncached    client.Reader
	reporter    *status.Reporter
	droplets    DropletReader
	concurrency int
	limits      BuildLimits
}

// NewBuildReconciler returns a BuildReconciler that reads droplets' process types with droplets,
// reads failed build pods with uncached, and stages up to concurrency builds at once, within
// DefaultBuildLimits.
func NewBuildReconciler(c client.Client, uncached client.Reader, recorder events.EventRecorder, droplets DropletReader, concurrency int) *BuildReconciler {
	return &BuildReconciler{client: c, uncached: uncached, reporter: status.NewReporter(c, recorder), droplets: droplets, concurrency: concurrency,
		limits: DefaultBuildLimits()}
}

// WithLimits bounds the build pods of the builds staged from now on; a zero field keeps its
// default. Images staged before keep theirs until their app stages again.
func (r *BuildReconciler) WithLimits(limits BuildLimits) *BuildReconciler {
	r.limits = limits.withDefaults()
	return r
}

// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfbuilds,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfbuilds/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfapps;cfpackages;cfspaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfapps/finalizers,verbs=update
// +kubebuilder:rbac:groups=kpack.io,resources=images,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=kpack.io,resources=builds,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=kpack.io,resources=builders,verbs=get;list;watch;create;patch;delete

// Reconcile stages a CFBuild until it succeeds or fails; a finished build is left alone.
func (r *BuildReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	build := &cfv1alpha1.CFBuild{}
	if err := r.client.Get(ctx, req.NamespacedName, build); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if build.Finished() {
		return ctrl.Result{}, nil
	}
	report := r.reporter.Track(build)
	defer func() { err = errors.Join(err, report(ctx)) }()

	in, err := r.observe(ctx, build)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := planStaging(in)
	for _, c := range plan.conditions {
		status.Set(build, c)
	}
	if plan.kpackBuild != "" {
		build.Status.KpackBuild, build.Status.Builder, build.Status.Droplet = plan.kpackBuild, plan.builder, plan.droplet
		if plan.rebuild != nil {
			build.Status.Rebuild = plan.rebuild
		}
	}
	return ctrl.Result{}, r.act(ctx, in, plan)
}

// observe reads what staging a build depends on: while it follows a kpack Build, that Build
// (and the droplet, once it succeeded); before, the app, the package, the app's other builds,
// the space's build configuration and Builders, the app's Image and the dedicated Builders it
// owns.
func (r *BuildReconciler) observe(ctx context.Context, build *cfv1alpha1.CFBuild) (stagingInputs, error) {
	in := stagingInputs{build: build, limits: r.limits}
	var err error
	if in.space, err = r.spaceOf(ctx, build.Namespace); err != nil {
		return in, err
	}
	if in.following = kpackBuildOf(build); in.following != "" {
		in.kpackBuild, err = r.kpackBuild(ctx, build.Namespace, in.following)
	} else {
		in.kpackBuild, err = r.kpackBuildStaging(ctx, build)
	}
	if err != nil {
		return in, err
	}
	if kb := in.kpackBuild; kb != nil {
		if _, rebuild := build.Labels[cfv1alpha1.KpackBuildLabel]; rebuild {
			if in.rebuilt, err = RebuiltBuilds(ctx, r.client, kb); err != nil {
				return in, err
			}
		}
		switch {
		case kb.IsSuccess():
			in.processes, err = r.processes(ctx, build.Namespace, kb.Status.LatestImage, in.space.Status.Build)
		case kb.IsFailure():
			in.failedStep, err = r.failedStep(ctx, kb)
		case kb.Status.PodName != "":
			in.unschedulable, err = r.unschedulable(ctx, kb)
		}
		return in, err
	}
	if in.app, err = get(ctx, r.client, build.Namespace, build.Spec.AppRef.Name, &cfv1alpha1.CFApp{}); in.app == nil || err != nil {
		return in, err
	}
	if in.active, err = r.activeBuild(ctx, in.app); err != nil {
		return in, err
	}
	if in.pkg, err = get(ctx, r.client, build.Namespace, build.Spec.PackageRef.Name, &cfv1alpha1.CFPackage{}); err != nil {
		return in, err
	}
	config := in.space.Status.Build
	if config == nil || config.Builder == nil {
		return in, nil
	}
	if in.defaultBuilder, err = get(ctx, r.client, config.Builder.From, config.Builder.Name, &kpackv1alpha2.Builder{}); in.defaultBuilder == nil || err != nil {
		return in, err
	}
	if lifecycle := builders.EffectiveLifecycle(build, in.app); !builders.UsesDefaultBuilder(lifecycle, in.defaultBuilder) {
		if in.dedicated, err = get(ctx, r.client, build.Namespace, builders.DedicatedBuilderName(lifecycle, in.defaultBuilder), &kpackv1alpha2.Builder{}); err != nil {
			return in, err
		}
	}
	if in.image, err = get(ctx, r.client, build.Namespace, in.app.Name, &kpackv1alpha2.Image{}); err != nil {
		return in, err
	}
	in.owned, err = r.ownedBuilders(ctx, in.app)
	return in, err
}

// act applies what the plan says: the dedicated Builder, owned by the app, then the app's
// Image; and it lets go of the app's dedicated Builders that the plan releases.
func (r *BuildReconciler) act(ctx context.Context, in stagingInputs, plan stagingPlan) error {
	if plan.dedicated != nil {
		wrote, err := apply.Object(ctx, r.client, in.dedicated, plan.dedicated, fieldOwner)
		if err != nil {
			return err
		}
		dedicated := in.dedicated
		if wrote {
			dedicated = plan.dedicated // as the apiserver returned it
		}
		if err := r.own(ctx, dedicated, in.app); err != nil {
			return err
		}
	}
	if plan.image == nil {
		return nil
	}
	if _, err := apply.Object(ctx, r.client, in.image, plan.image, fieldOwner); err != nil {
		return err
	}
	return r.release(ctx, in.app, plan.release)
}

// kpackBuildOf returns the kpack Build a CFBuild already follows: the one it found for itself,
// or, for a rebuild, the one kpack started.
func kpackBuildOf(build *cfv1alpha1.CFBuild) string {
	if name := build.Labels[cfv1alpha1.KpackBuildLabel]; name != "" {
		return name
	}
	return build.Status.KpackBuild
}

func (r *BuildReconciler) kpackBuild(ctx context.Context, namespace, name string) (*kpackv1alpha2.Build, error) {
	return get(ctx, r.client, namespace, name, &kpackv1alpha2.Build{})
}

// failedStep reads, from the pod of a failed kpack Build, which step failed and the end of its
// log; nil when the pod is gone or no step exited with an error (the pod was evicted, say).
func (r *BuildReconciler) failedStep(ctx context.Context, kb *kpackv1alpha2.Build) (*failedStep, error) {
	if kb.Status.PodName == "" {
		return nil, nil
	}
	pod, err := get(ctx, r.uncached, kb.Namespace, kb.Status.PodName, &corev1.Pod{})
	if pod == nil || err != nil {
		return nil, err
	}
	return failedStepOf(pod), nil
}

// unschedulable is why the scheduler cannot place a running kpack Build's pod, from the cache,
// "" if it can.
func (r *BuildReconciler) unschedulable(ctx context.Context, kb *kpackv1alpha2.Build) (string, error) {
	pod, err := get(ctx, r.client, kb.Namespace, kb.Status.PodName, &corev1.Pod{})
	if pod == nil || err != nil {
		return "", err
	}
	if c := unscheduled(pod); c != nil {
		return c.Message, nil
	}
	return "", nil
}

// processes reads a droplet's process types with the space's winning credentials.
func (r *BuildReconciler) processes(ctx context.Context, namespace, image string, config *cfv1alpha1.SpaceBuildConfig) ([]cfv1alpha1.ProcessType, error) {
	var secrets []corev1.Secret
	if config != nil {
		for _, ref := range config.SecretNames() {
			secret := &corev1.Secret{}
			if err := r.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, secret); err != nil {
				return nil, err
			}
			secrets = append(secrets, *secret)
		}
	}
	keychain, err := kauth.NewFromPullSecrets(ctx, secrets)
	if err != nil {
		return nil, err
	}
	return r.droplets.ProcessTypes(ctx, image, keychain)
}

// spaceOf returns the CFSpace of a space namespace; its status holds the build configuration.
// Outside a space, it returns an empty CFSpace, which cannot build. The cache holds only the
// namespaces of CF's tree: one it does not hold is no space, or not one yet.
func (r *BuildReconciler) spaceOf(ctx context.Context, namespace string) (*cfv1alpha1.CFSpace, error) {
	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: namespace}, ns); client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	notASpace := &cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	org := ns.Labels[cfv1alpha1.OrgGUIDLabel]
	if org == "" {
		return notASpace, nil
	}
	space := &cfv1alpha1.CFSpace{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: org, Name: namespace}, space)
	if apierrors.IsNotFound(err) {
		return notASpace, nil
	}
	return space, err
}

// activeBuild returns the CFBuild of an app that stages now: the oldest that has not finished.
// kpack builds an Image's builds one after the other; so does this.
func (r *BuildReconciler) activeBuild(ctx context.Context, app *cfv1alpha1.CFApp) (string, error) {
	builds := &cfv1alpha1.CFBuildList{}
	// Read only: the cache's own objects, not copies of every waiting build of the app.
	if err := r.client.List(ctx, builds, client.InNamespace(app.Namespace), client.MatchingFields{waitingIndex: waitingOn("CFApp", app.Name)},
		client.UnsafeDisableDeepCopy); err != nil {
		return "", err
	}
	var pending []cfv1alpha1.CFBuild
	for _, b := range builds.Items {
		if _, rebuild := b.Labels[cfv1alpha1.RebuildOfLabel]; !rebuild && b.DeletionTimestamp.IsZero() {
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
		if StagedBuild(kb) == build.Name && (first == nil || BuildNumber(kb) < BuildNumber(first)) {
			first = kb
		}
	}
	return first, nil
}

// SetupWithManager registers the reconciler: it runs for CFBuilds, for kpack Builds and their
// pods, and for whatever a waiting build waits for (waitingBuilds). Of an app and a package,
// only a change of the spec, or its creation or deletion, is news for a build; of another
// build, only that it joined or left the queue of its app.
func (r *BuildReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &cfv1alpha1.CFBuild{}, waitingIndex, waitingKeys); err != nil {
		return err
	}
	waiting := handler.EnqueueRequestsFromMapFunc(r.waitingBuilds)
	specChanged := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	return ctrl.NewControllerManagedBy(mgr).
		Named("cfbuild").
		For(&cfv1alpha1.CFBuild{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.concurrency}).
		Watches(&cfv1alpha1.CFBuild{}, waiting, builder.WithPredicates(queueChanged)).
		Watches(&cfv1alpha1.CFPackage{}, waiting, specChanged).
		Watches(&cfv1alpha1.CFApp{}, waiting, specChanged).
		Watches(&kpackv1alpha2.Builder{}, waiting).
		Watches(&cfv1alpha1.CFSpace{}, waiting).
		Watches(&kpackv1alpha2.Build{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			return stagingRequests(o.(*kpackv1alpha2.Build))
		})).
		// A build pod that the scheduler cannot place changes no kpack Build.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			kb, err := get(ctx, r.client, o.GetNamespace(), o.GetLabels()[kpackv1alpha2.BuildLabel], &kpackv1alpha2.Build{})
			if kb == nil || err != nil {
				return nil
			}
			return stagingRequests(kb)
		})).
		Complete(r)
}

// queueChanged passes the events of a CFBuild that joins or leaves the queue of its app's
// builds. One that leaves it (it finished, or is being deleted) lets the next build of the app
// stage. One that joins it may go first: a build made in the same second as another, with a
// smaller name, which the other did not see when it took the head of the queue.
var queueChanged = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return true },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, build := e.ObjectOld.(*cfv1alpha1.CFBuild), e.ObjectNew.(*cfv1alpha1.CFBuild)
		return build.Finished() && !old.Finished() || !build.DeletionTimestamp.IsZero() && old.DeletionTimestamp.IsZero()
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// waitingBuilds maps an object to the unfinished CFBuilds that wait for it: a CFApp to its
// builds, a CFBuild to the other builds of its app, a CFPackage to the builds that stage it, a
// dedicated Builder to the builds of the apps that own it, a CFSpace to every build of its
// namespace.
func (r *BuildReconciler) waitingBuilds(ctx context.Context, o client.Object) []ctrl.Request {
	switch o := o.(type) {
	case *cfv1alpha1.CFApp:
		return r.waitingFor(ctx, o.Namespace, waitingOn("CFApp", o.Name))
	case *cfv1alpha1.CFBuild:
		return r.waitingFor(ctx, o.Namespace, waitingOn("CFApp", o.Spec.AppRef.Name))
	case *cfv1alpha1.CFPackage:
		return r.waitingFor(ctx, o.Namespace, waitingOn("CFPackage", o.Name))
	case *kpackv1alpha2.Builder:
		var requests []ctrl.Request
		for _, ref := range o.OwnerReferences {
			if ref.Kind == "CFApp" && ref.APIVersion == cfv1alpha1.GroupVersion.String() {
				requests = append(requests, r.waitingFor(ctx, o.Namespace, waitingOn("CFApp", ref.Name))...)
			}
		}
		return requests
	case *cfv1alpha1.CFSpace:
		return r.waitingFor(ctx, o.Name, onSpace)
	}
	return nil
}

// waitingFor lists the unfinished CFBuilds of a namespace under a key of waitingIndex.
func (r *BuildReconciler) waitingFor(ctx context.Context, namespace, key string) []ctrl.Request {
	builds := &cfv1alpha1.CFBuildList{}
	if err := r.client.List(ctx, builds, client.InNamespace(namespace), client.MatchingFields{waitingIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the builds that wait", "namespace", namespace, "for", key)
		return nil
	}
	requests := make([]ctrl.Request, len(builds.Items))
	for i := range builds.Items {
		requests[i] = ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&builds.Items[i])}
	}
	return requests
}

// stagingRequests are the CFBuilds a kpack Build may stage: the one it stages, or the rebuild
// CFBuild named after it.
func stagingRequests(kb *kpackv1alpha2.Build) []ctrl.Request {
	requests := []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: kb.Namespace, Name: kb.Name}}}
	if guid := StagedBuild(kb); guid != "" {
		requests = append(requests, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: kb.Namespace, Name: guid}})
	}
	return requests
}
