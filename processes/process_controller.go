package processes

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/apply"
	"code.cloudfoundry.org/cf-hnc/internal/status"
)

// fieldOwner is the field manager of the StatefulSets cf-hnc applies.
const fieldOwner = client.FieldOwner("cf-hnc-processes")

// processAppIndex indexes CFProcesses by the app they belong to.
const processAppIndex = "spec.appRef.name"

// ProcessReconciler runs a process: it keeps a StatefulSet of the process's instances on its
// app's current droplet while the app is started (scaled to zero while it is stopped), and
// reports how the instances run.
type ProcessReconciler struct {
	client   client.Client
	reporter *status.Reporter
}

// NewProcessReconciler returns a ProcessReconciler.
func NewProcessReconciler(c client.Client, recorder events.EventRecorder) *ProcessReconciler {
	return &ProcessReconciler{client: c, reporter: status.NewReporter(c, recorder)}
}

// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfprocesses,verbs=get;list;watch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfprocesses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfapps;cfbuilds,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile runs a process: observe, decide, act, report.
func (r *ProcessReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	p := &cfv1alpha1.CFProcess{}
	if err := r.client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !p.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	in, err := r.observe(ctx, p)
	if err != nil || in.app == nil {
		return ctrl.Result{}, err // a process whose app is gone goes with it
	}
	report := r.reporter.Track(p)
	defer func() { err = errors.Join(err, report(ctx)) }()

	plan := planProcess(in)
	if err := r.act(ctx, in, plan); err != nil {
		return ctrl.Result{}, err
	}
	p.Status.Droplet = plan.droplet
	p.Status.Selector = labels.SelectorFromSet(labels.Set{cfv1alpha1.ProcessLabel: p.Name}).String()
	status.Set(p, instancesStatus(p, in.pods, plan.desired, plan.image, plan.why, plan.whyMessage, plan.overQuota))
	return ctrl.Result{}, nil
}

// observe reads what running a process depends on: its app (nil once it is gone or being
// deleted), the droplet the app should run, what the instances' environment says of the space
// and its org, the process's StatefulSet and pods, and the space's ResourceQuotas.
func (r *ProcessReconciler) observe(ctx context.Context, p *cfv1alpha1.CFProcess) (processInputs, error) {
	in := processInputs{process: p}
	app := &cfv1alpha1.CFApp{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.AppRef.Name}, app); err != nil || !app.DeletionTimestamp.IsZero() {
		return in, client.IgnoreNotFound(err)
	}
	var err error
	if in.run, err = r.runContext(ctx, app); err != nil {
		return in, err
	}
	in.app = app
	if in.current, err = r.statefulSet(ctx, p); err != nil {
		return in, err
	}
	pods := &corev1.PodList{}
	if err := r.client.List(ctx, pods, client.InNamespace(p.Namespace), client.MatchingLabels{cfv1alpha1.ProcessLabel: p.Name}); err != nil {
		return in, err
	}
	quotas := &corev1.ResourceQuotaList{}
	if err := r.client.List(ctx, quotas, client.InNamespace(p.Namespace)); err != nil {
		return in, err
	}
	in.pods, in.quotas = pods.Items, quotas.Items
	return in, nil
}

// runContext finds the droplet the app should run, and what its instances' environment says of
// its space and org.
func (r *ProcessReconciler) runContext(ctx context.Context, app *cfv1alpha1.CFApp) (runContext, error) {
	rc := runContext{app: app}
	if name := app.Spec.CurrentDropletRef.Name; name != "" {
		build := &cfv1alpha1.CFBuild{}
		err := r.client.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: name}, build)
		switch {
		case err == nil && build.StagedDroplet() != nil:
			rc.droplet = build
		case err != nil && !apierrors.IsNotFound(err):
			return rc, err
		}
	}
	space := &corev1.Namespace{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: app.Namespace}, space); err != nil {
		return rc, client.IgnoreNotFound(err)
	}
	rc.spaceGUID, rc.spaceName = space.Labels[cfv1alpha1.SpaceGUIDLabel], space.Annotations[cfv1alpha1.SpaceNameAnnotation]
	rc.orgGUID = space.Labels[cfv1alpha1.OrgGUIDLabel]
	org := &corev1.Namespace{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: rc.orgGUID}, org); err == nil {
		rc.orgName = org.Annotations[cfv1alpha1.OrgNameAnnotation]
	} else if !apierrors.IsNotFound(err) {
		return rc, err
	}
	return rc, nil
}

// statefulSet reads the process's StatefulSet, nil if there is none.
func (r *ProcessReconciler) statefulSet(ctx context.Context, p *cfv1alpha1.CFProcess) (*appsv1.StatefulSet, error) {
	current := &appsv1.StatefulSet{}
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(p), current); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return current, nil
}

// act applies the planned StatefulSet, or stops the instances of a process whose app has no
// droplet any more (its current droplet was deleted), keeping the rest of its StatefulSet.
func (r *ProcessReconciler) act(ctx context.Context, in processInputs, plan processPlan) error {
	if plan.statefulSet != nil {
		_, err := apply.Object(ctx, r.client, in.current, plan.statefulSet, fieldOwner)
		return err
	}
	current := in.current
	if current == nil || current.Spec.Replicas == nil || *current.Spec.Replicas == 0 {
		return nil
	}
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.Replicas = new(int32)
	return r.client.Patch(ctx, current, patch)
}

// SetupWithManager registers the reconciler: it runs for CFProcesses, for the processes of a
// CFApp and of an app's CFBuild, and for the process of a StatefulSet or a pod of its instances.
func (r *ProcessReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &cfv1alpha1.CFProcess{}, processAppIndex,
		func(o client.Object) []string { return []string{o.(*cfv1alpha1.CFProcess).Spec.AppRef.Name} }); err != nil {
		return err
	}
	processesOf := func(app func(client.Object) string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return r.processesOfApp(ctx, o.GetNamespace(), app(o))
		})
	}
	processOf := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
		if name := o.GetLabels()[cfv1alpha1.ProcessLabel]; name != "" {
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("cfprocess").
		For(&cfv1alpha1.CFProcess{}).
		Watches(&cfv1alpha1.CFApp{}, processesOf(client.Object.GetName)).
		Watches(&cfv1alpha1.CFBuild{}, processesOf(func(o client.Object) string { return o.(*cfv1alpha1.CFBuild).Spec.AppRef.Name })).
		Watches(&appsv1.StatefulSet{}, processOf).
		Watches(&corev1.Pod{}, processOf).
		Complete(r)
}

// processesOfApp are the requests of the processes of an app.
func (r *ProcessReconciler) processesOfApp(ctx context.Context, namespace, app string) []ctrl.Request {
	processes := &cfv1alpha1.CFProcessList{}
	if err := r.client.List(ctx, processes, client.InNamespace(namespace), client.MatchingFields{processAppIndex: app}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the processes of an app", "namespace", namespace, "app", app)
		return nil
	}
	requests := make([]ctrl.Request, len(processes.Items))
	for i := range processes.Items {
		requests[i] = ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&processes.Items[i])}
	}
	return requests
}
