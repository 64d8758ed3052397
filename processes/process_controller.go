package processes

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// ProcessReconciler runs apps. Per app it makes the web process, and for each of the app's
// processes keeps a StatefulSet of its instances on the app's current droplet while the app is
// started (scaled to zero while it is stopped), and reports how the instances run.
type ProcessReconciler struct {
	client   client.Client
	reporter *status.Reporter
}

// NewProcessReconciler returns a ProcessReconciler.
func NewProcessReconciler(c client.Client, recorder events.EventRecorder) *ProcessReconciler {
	return &ProcessReconciler{client: c, reporter: status.NewReporter(c, recorder)}
}

// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfprocesses,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfprocesses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=workloads.cloudfoundry.org,resources=cfapps;cfbuilds,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch

// Reconcile runs the processes of an app.
func (r *ProcessReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := &cfv1alpha1.CFApp{}
	if err := r.client.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !app.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if err := r.ensureWebProcess(ctx, app); err != nil {
		return ctrl.Result{}, err
	}
	processes := &cfv1alpha1.CFProcessList{}
	if err := r.client.List(ctx, processes, client.InNamespace(app.Namespace), client.MatchingFields{processAppIndex: app.Name}); err != nil {
		return ctrl.Result{}, err
	}
	rc, err := r.observe(ctx, app)
	if err != nil {
		return ctrl.Result{}, err
	}
	var errs []error
	for i := range processes.Items {
		errs = append(errs, r.run(ctx, &processes.Items[i], rc))
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// ensureWebProcess makes the app's web process with Cloud Foundry's defaults, unless it exists
// (kubectl cf push makes it itself when told how to scale a new app).
func (r *ProcessReconciler) ensureWebProcess(ctx context.Context, app *cfv1alpha1.CFApp) error {
	web := cfv1alpha1.NewWebProcess(app)
	// cf-hnc, unlike the clients that may make it first, has the right to hold a foreground
	// deletion of the app until its process is gone.
	web.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(app, cfv1alpha1.GroupVersion.WithKind("CFApp"))}
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(web), &cfv1alpha1.CFProcess{}); !apierrors.IsNotFound(err) {
		return err
	}
	if err := r.client.Create(ctx, web); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the web process: %w", err)
	}
	return nil
}

// observe finds the droplet the app should run, and what its instances' environment says of
// its space and org.
func (r *ProcessReconciler) observe(ctx context.Context, app *cfv1alpha1.CFApp) (runContext, error) {
	rc := runContext{app: app}
	if name := app.Spec.CurrentDropletRef.Name; name != "" {
		build := &cfv1alpha1.CFBuild{}
		err := r.client.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: name}, build)
		switch {
		case err == nil && build.Status.Droplet != nil && meta.IsStatusConditionTrue(build.Status.Conditions, cfv1alpha1.SucceededCondition):
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

// run keeps one process's instances on the droplet, as many as the app's state asks for, and
// reports them.
func (r *ProcessReconciler) run(ctx context.Context, p *cfv1alpha1.CFProcess, rc runContext) (err error) {
	report := r.reporter.Track(p)
	defer func() { err = errors.Join(err, report(ctx)) }()

	current := &appsv1.StatefulSet{}
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(p), current); apierrors.IsNotFound(err) {
		current = nil
	} else if err != nil {
		return err
	}
	desired, why, whyMessage := p.Spec.Instances, "", ""
	switch {
	case rc.app.Spec.DesiredState != cfv1alpha1.StartedState:
		desired, why, whyMessage = 0, cfv1alpha1.AppStoppedReason, "the app is stopped"
	case rc.droplet == nil:
		desired, why, whyMessage = 0, cfv1alpha1.NoDropletToRunReason, "the app has no staged droplet to run: push or stage it, and set its current droplet"
	}
	image := ""
	p.Status.Droplet = ""
	if rc.droplet != nil {
		image = rc.droplet.Status.Droplet.Registry.Image
		p.Status.Droplet = rc.droplet.Name
		if _, err := apply.Object(ctx, r.client, current, desiredStatefulSet(p, rc, desired), fieldOwner); err != nil {
			return err
		}
	} else if err := r.scaleToZero(ctx, current); err != nil {
		return err
	}
	pods := &corev1.PodList{}
	if err := r.client.List(ctx, pods, client.InNamespace(p.Namespace), client.MatchingLabels{cfv1alpha1.ProcessLabel: p.Name}); err != nil {
		return err
	}
	overQuota, err := r.overQuota(ctx, p, pods.Items, desired)
	if err != nil {
		return err
	}
	p.Status.Selector = labels.SelectorFromSet(labels.Set{cfv1alpha1.ProcessLabel: p.Name}).String()
	status.Set(p, instancesStatus(p, pods.Items, desired, image, why, whyMessage, overQuota))
	return nil
}

// overQuota says which ResourceQuota of the space keeps the StatefulSet from making the
// instances that have no pod yet; "" when none is missing or the quotas have room. Only the
// StatefulSet's events would say it otherwise, which app developers do not read.
func (r *ProcessReconciler) overQuota(ctx context.Context, p *cfv1alpha1.CFProcess, pods []corev1.Pod, desired int32) (string, error) {
	live := 0
	for i := range pods {
		if pods[i].DeletionTimestamp == nil {
			live++
		}
	}
	if live >= int(desired) {
		return "", nil
	}
	quotas := &corev1.ResourceQuotaList{}
	if err := r.client.List(ctx, quotas, client.InNamespace(p.Namespace)); err != nil {
		return "", err
	}
	return quotaShortfall(quotas.Items, instanceNeeds(p)), nil
}

// scaleToZero stops the instances of a process whose app has no droplet any more (its current
// droplet was deleted), keeping the rest of its StatefulSet.
func (r *ProcessReconciler) scaleToZero(ctx context.Context, current *appsv1.StatefulSet) error {
	if current == nil || current.Spec.Replicas == nil || *current.Spec.Replicas == 0 {
		return nil
	}
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.Replicas = new(int32)
	return r.client.Patch(ctx, current, patch)
}

// SetupWithManager registers the reconciler: it runs for CFApps, and for the app of a
// CFProcess, of a CFBuild, and of a StatefulSet or pod of its instances.
func (r *ProcessReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &cfv1alpha1.CFProcess{}, processAppIndex,
		func(o client.Object) []string { return []string{o.(*cfv1alpha1.CFProcess).Spec.AppRef.Name} }); err != nil {
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
	instanceOfApp := func(o client.Object) string {
		if _, ok := o.GetLabels()[cfv1alpha1.ProcessLabel]; !ok {
			return ""
		}
		return o.GetLabels()[cfv1alpha1.AppLabel]
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("cfprocess").
		For(&cfv1alpha1.CFApp{}).
		Watches(&cfv1alpha1.CFProcess{}, appOf(func(o client.Object) string { return o.(*cfv1alpha1.CFProcess).Spec.AppRef.Name })).
		Watches(&cfv1alpha1.CFBuild{}, appOf(func(o client.Object) string { return o.(*cfv1alpha1.CFBuild).Spec.AppRef.Name })).
		Watches(&appsv1.StatefulSet{}, appOf(func(o client.Object) string { return o.GetLabels()[cfv1alpha1.AppLabel] })).
		Watches(&corev1.Pod{}, appOf(instanceOfApp)).
		Complete(r)
}
