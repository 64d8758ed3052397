package builders

import (
	"context"
	"fmt"
	"slices"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// RebuildReconciler makes a CFBuild for every build that cf-hnc did not ask kpack for: after a
// new stack run image, new buildpacks or a new lifecycle, kpack rebuilds every Image built
// before, and cf-hnc itself rebases the droplets that kpack's Images do not; each such build
// becomes a droplet of its app. The CFBuild is named after the kpack Build, so that one kpack
// Build never makes two droplets, also across restarts.
type RebuildReconciler struct {
	client   client.Client
	recorder events.EventRecorder
}

// NewRebuildReconciler returns a RebuildReconciler.
func NewRebuildReconciler(c client.Client, recorder events.EventRecorder) *RebuildReconciler {
	return &RebuildReconciler{client: c, recorder: recorder}
}

// Reconcile makes the CFBuild of a kpack Build that no CFBuild asked for.
func (r *RebuildReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	kb := &kpackv1alpha2.Build{}
	if err := r.client.Get(ctx, req.NamespacedName, kb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	rebuilt, err := rebuiltBuilds(ctx, r.client, kb)
	if len(rebuilt) == 0 || err != nil {
		return ctrl.Result{}, err
	}
	base := &rebuilt[0]
	app := &cfv1alpha1.CFApp{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: kb.Namespace, Name: base.Spec.AppRef.Name}, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	rebuild := desiredRebuild(kb, base)
	rebuild.OwnerReferences = []metav1.OwnerReference{{APIVersion: cfv1alpha1.GroupVersion.String(), Kind: "CFApp", Name: app.Name, UID: app.UID}}
	err = r.client.Create(ctx, rebuild)
	if apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, r.checkTaken(ctx, kb, rebuilt, app)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	r.recorder.Eventf(rebuild, kb, corev1.EventTypeNormal, cfv1alpha1.RebuildStartedReason, "Rebuild",
		"rebuilding app %s because of %s (kpack build %s)", base.Spec.AppRef.Name, rebuild.Annotations[cfv1alpha1.RebuildReasonAnnotation], kb.Name)
	return ctrl.Result{}, nil
}

// checkTaken looks at the CFBuild that holds the name of a kpack Build's rebuild: the rebuild
// itself, made before, or a CFBuild that somebody made under that name, which would opt the
// app out of the rebuild. The app says so in an event, and in its DropletCurrent condition
// (AppReconciler.reportTakenRebuild); deleting that CFBuild lets cf-hnc make the rebuild
// (SetupWithManager).
func (r *RebuildReconciler) checkTaken(ctx context.Context, kb *kpackv1alpha2.Build, rebuilt []cfv1alpha1.CFBuild, app *cfv1alpha1.CFApp) error {
	holder, err := get(ctx, r.client, kb.Namespace, kb.Name, &cfv1alpha1.CFBuild{})
	if err != nil {
		return err
	}
	if holder == nil {
		return fmt.Errorf("CFBuild %s/%s was deleted as its rebuild was made; making it again", kb.Namespace, kb.Name)
	}
	mismatch := rebuildMismatch(holder, kb, rebuilt)
	if mismatch == "" {
		return nil
	}
	r.recorder.Eventf(app, holder, corev1.EventTypeWarning, cfv1alpha1.RebuildNameTakenReason, "Rebuild",
		"kpack rebuilt app %s, but another CFBuild has the name of its rebuild: %s; delete CFBuild %s and cf-hnc makes the rebuild",
		app.Name, mismatch, kb.Name)
	return nil
}

// rebuiltBuilds returns the CFBuilds whose droplet a kpack Build may rebuild, the one its
// rebuild is filed under first; none if the Build is not a rebuild:
//   - a rebase that cf-hnc started names the droplet in its RebaseOfLabel;
//   - a rebase of an app's Image (reason exactly STACK; never a push, whose reasons include
//     CONFIG) rebases the droplet image in its spec.lastBuild: the CFBuilds of the app with
//     that droplet (dropletBuilds), which are not the CFBuild in its environment when the
//     Image's latest push failed;
//   - any other build of the Image later than the one that staged the CFBuild in its
//     environment rebuilds that CFBuild's package.
func rebuiltBuilds(ctx context.Context, c client.Reader, kb *kpackv1alpha2.Build) ([]cfv1alpha1.CFBuild, error) {
	if droplet := kb.Labels[RebaseOfLabel]; droplet != "" {
		if !ownedByApp(kb) {
			return nil, nil // cf-hnc's rebases are owned by their app
		}
		rebased, err := get(ctx, c, kb.Namespace, droplet, &cfv1alpha1.CFBuild{})
		if rebased == nil || err != nil {
			return nil, err
		}
		return []cfv1alpha1.CFBuild{*rebased}, nil
	}
	guid := stagedBuild(kb)
	if guid == "" {
		return nil, nil // a kpack Build of an Image that cf-hnc did not make
	}
	if last := kb.Spec.LastBuild; kb.Annotations[kpackv1alpha2.BuildReasonAnnotation] == stackOnly && last != nil && last.Image != "" {
		rebased, err := dropletBuilds(ctx, c, kb.Namespace, kb.Labels[kpackv1alpha2.ImageLabel], last.Image)
		if len(rebased) > 0 || err != nil {
			return rebased, err
		}
	}
	origin, err := get(ctx, c, kb.Namespace, guid, &cfv1alpha1.CFBuild{})
	if origin == nil || err != nil {
		return nil, err
	}
	if rebuild, err := isRebuildOf(ctx, c, kb, origin); !rebuild || err != nil {
		return nil, err
	}
	return []cfv1alpha1.CFBuild{*origin}, nil
}

// dropletBuilds returns the CFBuilds of an app whose droplet is image: the one the app runs
// first if it is one (a restage with nothing changed stages the same image again), then the
// others, oldest first.
func dropletBuilds(ctx context.Context, c client.Reader, namespace, app, image string) ([]cfv1alpha1.CFBuild, error) {
	running, err := get(ctx, c, namespace, app, &cfv1alpha1.CFApp{})
	if running == nil || err != nil {
		return nil, err
	}
	builds := &cfv1alpha1.CFBuildList{}
	if err := c.List(ctx, builds, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	found := slices.DeleteFunc(builds.Items, func(b cfv1alpha1.CFBuild) bool {
		return b.Spec.AppRef.Name != app || b.Status.Droplet == nil || !sameImage(b.Status.Droplet.Registry.Image, image)
	})
	slices.SortFunc(found, func(a, b cfv1alpha1.CFBuild) int {
		switch running.Spec.CurrentDropletRef.Name {
		case a.Name:
			return -1
		case b.Name:
			return 1
		}
		return olderFirst(&a, &b)
	})
	return found, nil
}

// ownedByApp says whether a kpack Build is owned by a CFApp.
func ownedByApp(kb *kpackv1alpha2.Build) bool {
	for _, ref := range kb.OwnerReferences {
		if ref.Kind == "CFApp" && ref.APIVersion == cfv1alpha1.GroupVersion.String() && ref.Name == kb.Labels[cfv1alpha1.AppLabel] {
			return true
		}
	}
	return false
}

// isRebuildOf says whether a kpack Build with the origin's name in its environment is a later
// build than the one that staged the origin.
func isRebuildOf(ctx context.Context, c client.Reader, kb *kpackv1alpha2.Build, origin *cfv1alpha1.CFBuild) (bool, error) {
	if origin.Status.KpackBuild == "" || origin.Status.KpackBuild == kb.Name {
		return false, nil
	}
	staged, err := get(ctx, c, kb.Namespace, origin.Status.KpackBuild, &kpackv1alpha2.Build{})
	if staged == nil || err != nil {
		// kpack has pruned the origin's build from its history; only later builds are left.
		return err == nil, err
	}
	return buildNumber(kb) > buildNumber(staged), nil
}

// desiredRebuild is the CFBuild of a rebuild of a droplet: that droplet's app, package and
// lifecycle, in its lineage, bound to the kpack Build. A rebase that cf-hnc started has no
// kpack build number. The reconciler makes the app its owner, so that it goes with it.
func desiredRebuild(kb *kpackv1alpha2.Build, rebuilt *cfv1alpha1.CFBuild) *cfv1alpha1.CFBuild {
	labels := map[string]string{
		cfv1alpha1.RebuildOfLabel:  lineageOf(rebuilt),
		cfv1alpha1.KpackBuildLabel: kb.Name,
	}
	if n, ok := kb.Labels[kpackv1alpha2.BuildNumberLabel]; ok {
		labels[cfv1alpha1.KpackBuildNumberLabel] = n
	}
	return &cfv1alpha1.CFBuild{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   kb.Namespace,
			Name:        kb.Name,
			Labels:      labels,
			Annotations: map[string]string{cfv1alpha1.RebuildReasonAnnotation: kb.Annotations[kpackv1alpha2.BuildReasonAnnotation]},
		},
		Spec: rebuilt.Spec,
	}
}

// rebuildMismatch says how a CFBuild marked as the rebuild of kpack Build kb differs from the
// CFBuild that cf-hnc makes of kb for any of rebuilt, the CFBuilds whose droplet kb may
// rebuild (rebuiltBuilds): its name, app, package and lifecycle, lineage, kpack build number
// and reasons; "" when it is that CFBuild. Only cf-hnc may mark a CFBuild as a rebuild
// (config/policies); this check holds without that policy.
func rebuildMismatch(build *cfv1alpha1.CFBuild, kb *kpackv1alpha2.Build, rebuilt []cfv1alpha1.CFBuild) string {
	if len(rebuilt) == 0 {
		return fmt.Sprintf("kpack build %s rebuilds no droplet in this namespace", kb.Name)
	}
	for i := range rebuilt {
		if sameRebuild(build, desiredRebuild(kb, &rebuilt[i])) {
			return ""
		}
	}
	return fmt.Sprintf("kpack build %s makes %s, and this is %s", kb.Name, describeRebuild(desiredRebuild(kb, &rebuilt[0])), describeRebuild(build))
}

// sameRebuild says whether two CFBuilds are the same rebuild: same name, marks and spec.
func sameRebuild(a, b *cfv1alpha1.CFBuild) bool {
	return a.Name == b.Name &&
		slices.IndexFunc(cfv1alpha1.OwnedBuildMetadata, func(key string) bool { return buildMark(a, key) != buildMark(b, key) }) < 0 &&
		equality.Semantic.DeepEqual(a.Spec, b.Spec)
}

// buildMark is the value of one of the labels or the annotation that mark a rebuild.
func buildMark(b *cfv1alpha1.CFBuild, key string) string {
	if key == cfv1alpha1.RebuildReasonAnnotation {
		return b.Annotations[key]
	}
	return b.Labels[key]
}

func describeRebuild(b *cfv1alpha1.CFBuild) string {
	return fmt.Sprintf("CFBuild %s of app %s, package %s, lineage %q, kpack build number %q, reasons %q",
		b.Name, b.Spec.AppRef.Name, b.Spec.PackageRef.Name, b.Labels[cfv1alpha1.RebuildOfLabel],
		b.Labels[cfv1alpha1.KpackBuildNumberLabel], b.Annotations[cfv1alpha1.RebuildReasonAnnotation])
}

// +kubebuilder:rbac:groups=kpack.io,resources=builds,verbs=get;list;watch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfbuilds/rebuild,verbs=create

// SetupWithManager registers the reconciler for kpack Builds, and for the deletion of a
// CFBuild that held the name of a kpack Build's rebuild.
func (r *RebuildReconciler) SetupWithManager(mgr ctrl.Manager) error {
	deleted := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("rebuild").
		For(&kpackv1alpha2.Build{}).
		// A rebuild is named after its kpack Build: the request names that kpack Build.
		Watches(&cfv1alpha1.CFBuild{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(deleted)).
		Complete(r)
}
