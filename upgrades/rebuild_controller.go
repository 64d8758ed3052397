package upgrades

import (
	"context"
	"fmt"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
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
	"code.cloudfoundry.org/cf-hnc/staging"
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
	rebuilt, err := staging.RebuiltBuilds(ctx, r.client, kb)
	if len(rebuilt) == 0 || err != nil {
		return ctrl.Result{}, err
	}
	base := &rebuilt[0]
	app := &cfv1alpha1.CFApp{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: kb.Namespace, Name: base.Spec.AppRef.Name}, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	rebuild := staging.DesiredRebuild(kb, base)
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
// (DropletReconciler.takenRebuilds); deleting that CFBuild lets cf-hnc make the rebuild
// (SetupWithManager).
func (r *RebuildReconciler) checkTaken(ctx context.Context, kb *kpackv1alpha2.Build, rebuilt []cfv1alpha1.CFBuild, app *cfv1alpha1.CFApp) error {
	holder, err := get(ctx, r.client, kb.Namespace, kb.Name, &cfv1alpha1.CFBuild{})
	if err != nil {
		return err
	}
	if holder == nil {
		return fmt.Errorf("CFBuild %s/%s was deleted as its rebuild was made; making it again", kb.Namespace, kb.Name)
	}
	mismatch := staging.RebuildMismatch(holder, kb, rebuilt)
	if mismatch == "" {
		return nil
	}
	r.recorder.Eventf(app, holder, corev1.EventTypeWarning, cfv1alpha1.RebuildNameTakenReason, "Rebuild",
		"kpack rebuilt app %s, but another CFBuild has the name of its rebuild: %s; delete CFBuild %s and cf-hnc makes the rebuild",
		app.Name, mismatch, kb.Name)
	return nil
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
