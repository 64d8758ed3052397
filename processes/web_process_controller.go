package processes

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// WebProcessReconciler makes the web process of every app, with Cloud Foundry's defaults,
// unless it exists (clients that scale a new app make it themselves).
type WebProcessReconciler struct {
	client client.Client
}

// NewWebProcessReconciler returns a WebProcessReconciler.
func NewWebProcessReconciler(c client.Client) *WebProcessReconciler {
	return &WebProcessReconciler{client: c}
}

// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfapps,verbs=get;list;watch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfprocesses,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfapps/finalizers,verbs=update

// Reconcile makes the app's web process if it has none.
func (r *WebProcessReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := &cfv1alpha1.CFApp{}
	if err := r.client.Get(ctx, req.NamespacedName, app); err != nil || !app.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	web := cfv1alpha1.NewWebProcess(app)
	// cf-hnc, unlike the clients that may make it first, has the right to hold a foreground
	// deletion of the app until its process is gone.
	web.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(app, cfv1alpha1.GroupVersion.WithKind("CFApp"))}
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(web), &cfv1alpha1.CFProcess{}); !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if err := r.client.Create(ctx, web); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("creating the web process: %w", err)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler: it runs for CFApps, and for the app of a process
// (one whose web process was deleted gets it back).
func (r *WebProcessReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("web-process").
		For(&cfv1alpha1.CFApp{}).
		Watches(&cfv1alpha1.CFProcess{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: o.(*cfv1alpha1.CFProcess).Spec.AppRef.Name}}}
		})).
		Complete(r)
}
