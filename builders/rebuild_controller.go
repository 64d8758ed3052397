package builders

import (
	"context"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	base, err := r.rebuilt(ctx, kb)
	if base == nil || err != nil {
		return ctrl.Result{}, err
	}
	app := &cfv1alpha1.CFApp{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: kb.Namespace, Name: base.Spec.AppRef.Name}, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	rebuild := desiredRebuild(kb, base, app)
	err = r.client.Create(ctx, rebuild)
	if apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	r.recorder.Eventf(rebuild, kb, corev1.EventTypeNormal, cfv1alpha1.RebuildStartedReason, "Rebuild",
		"rebuilding app %s because of %s (kpack build %s)", base.Spec.AppRef.Name, rebuild.Annotations[cfv1alpha1.RebuildReasonAnnotation], kb.Name)
	return ctrl.Result{}, nil
}

// rebuilt returns the CFBuild whose droplet a kpack Build rebuilds, or nil if the Build is not
// a rebuild:
//   - a rebase that cf-hnc started names the droplet in its RebaseOfLabel;
//   - a rebase of an app's Image (reason exactly STACK; never a push, whose reasons include
//     CONFIG) rebases the droplet image in its spec.lastBuild: the CFBuild with that droplet,
//     which is not the CFBuild in its environment when the Image's latest push failed;
//   - any other build of the Image later than the one that staged the CFBuild in its
//     environment rebuilds that CFBuild's package.
func (r *RebuildReconciler) rebuilt(ctx context.Context, kb *kpackv1alpha2.Build) (*cfv1alpha1.CFBuild, error) {
	if droplet := kb.Labels[RebaseOfLabel]; droplet != "" {
		if !ownedByApp(kb) {
			return nil, nil // cf-hnc's rebases are owned by their app
		}
		return get(ctx, r.client, kb.Namespace, droplet, &cfv1alpha1.CFBuild{})
	}
	guid := stagedBuild(kb)
	if guid == "" {
		return nil, nil // a kpack Build of an Image that cf-hnc did not make
	}
	if last := kb.Spec.LastBuild; kb.Annotations[kpackv1alpha2.BuildReasonAnnotation] == stackOnly && last != nil && last.Image != "" {
		rebased, err := r.dropletBuild(ctx, kb.Namespace, kb.Labels[kpackv1alpha2.ImageLabel], last.Image)
		if rebased != nil || err != nil {
			return rebased, err
		}
	}
	origin, err := get(ctx, r.client, kb.Namespace, guid, &cfv1alpha1.CFBuild{})
	if origin == nil || err != nil || !r.isRebuildOf(ctx, kb, origin) {
		return nil, err
	}
	return origin, nil
}

// dropletBuild returns a CFBuild of an app whose droplet is image: the one the app runs if it
// is one (a restage with nothing changed stages the same image again), else the first; nil if
// there is none.
func (r *RebuildReconciler) dropletBuild(ctx context.Context, namespace, app, image string) (*cfv1alpha1.CFBuild, error) {
	running, err := get(ctx, r.client, namespace, app, &cfv1alpha1.CFApp{})
	if running == nil || err != nil {
		return nil, err
	}
	builds := &cfv1alpha1.CFBuildList{}
	if err := r.client.List(ctx, builds, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var found *cfv1alpha1.CFBuild
	for i := range builds.Items {
		b := &builds.Items[i]
		if b.Spec.AppRef.Name != app || b.Status.Droplet == nil || !sameImage(b.Status.Droplet.Registry.Image, image) {
			continue
		}
		if b.Name == running.Spec.CurrentDropletRef.Name {
			return b, nil
		}
		if found == nil || olderFirst(b, found) < 0 {
			found = b
		}
	}
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
func (r *RebuildReconciler) isRebuildOf(ctx context.Context, kb *kpackv1alpha2.Build, origin *cfv1alpha1.CFBuild) bool {
	if origin.Status.KpackBuild == "" || origin.Status.KpackBuild == kb.Name {
		return false
	}
	staged := &kpackv1alpha2.Build{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: kb.Namespace, Name: origin.Status.KpackBuild}, staged); err == nil {
		return buildNumber(kb) > buildNumber(staged)
	}
	// kpack has pruned the origin's build from its history; only later builds are left.
	return true
}

// desiredRebuild is the CFBuild of a rebuild of a droplet: that droplet's app, package and
// lifecycle, in its lineage, bound to the kpack Build, owned by the app so that it goes with
// it. A rebase that cf-hnc started has no kpack build number.
func desiredRebuild(kb *kpackv1alpha2.Build, rebuilt *cfv1alpha1.CFBuild, app *cfv1alpha1.CFApp) *cfv1alpha1.CFBuild {
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
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: cfv1alpha1.GroupVersion.String(), Kind: "CFApp", Name: app.Name, UID: app.UID,
			}},
		},
		Spec: rebuilt.Spec,
	}
}

// +kubebuilder:rbac:groups=kpack.io,resources=builds,verbs=get;list;watch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfbuilds/rebuild,verbs=create

// SetupWithManager registers the reconciler for kpack Builds.
func (r *RebuildReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("rebuild").
		For(&kpackv1alpha2.Build{}).
		Complete(r)
}
