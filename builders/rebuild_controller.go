package builders

import (
	"context"
	"strconv"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// RebuildReconciler makes a CFBuild for every build that kpack starts on its own: after a new
// stack run image, new buildpacks or a new lifecycle, kpack rebuilds every Image built before,
// and each rebuild becomes a droplet of its app. The CFBuild is named after the kpack Build,
// so that one kpack Build never makes two droplets, also across restarts.
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
	guid := stagedBuild(kb)
	if guid == "" {
		return ctrl.Result{}, nil // a kpack Build of an Image that cf-hnc did not make
	}
	origin := &cfv1alpha1.CFBuild{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: kb.Namespace, Name: guid}, origin); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.isRebuildOf(ctx, kb, origin) {
		return ctrl.Result{}, nil
	}
	app := &cfv1alpha1.CFApp{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: kb.Namespace, Name: origin.Spec.AppRef.Name}, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	rebuild := desiredRebuild(kb, origin, app)
	err := r.client.Create(ctx, rebuild)
	if apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	r.recorder.Eventf(rebuild, kb, corev1.EventTypeNormal, cfv1alpha1.RebuildStartedReason, "Rebuild",
		"kpack rebuilds app %s because of %s (kpack build %s)", origin.Spec.AppRef.Name, rebuild.Annotations[cfv1alpha1.RebuildReasonAnnotation], kb.Name)
	return ctrl.Result{}, nil
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

// desiredRebuild is the CFBuild of a rebuild: the origin's app, package and lifecycle, bound to
// the kpack Build, owned by the app so that it goes with it.
func desiredRebuild(kb *kpackv1alpha2.Build, origin *cfv1alpha1.CFBuild, app *cfv1alpha1.CFApp) *cfv1alpha1.CFBuild {
	return &cfv1alpha1.CFBuild{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: kb.Namespace,
			Name:      kb.Name,
			Labels: map[string]string{
				cfv1alpha1.RebuildOfLabel:        origin.Name,
				cfv1alpha1.KpackBuildLabel:       kb.Name,
				cfv1alpha1.KpackBuildNumberLabel: strconv.Itoa(buildNumber(kb)),
			},
			Annotations: map[string]string{cfv1alpha1.RebuildReasonAnnotation: kb.Annotations[kpackv1alpha2.BuildReasonAnnotation]},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: cfv1alpha1.GroupVersion.String(), Kind: "CFApp", Name: app.Name, UID: app.UID,
			}},
		},
		Spec: origin.Spec,
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
