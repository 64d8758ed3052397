package cf

import (
	"cmp"
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// ProcessChange is what cf scale, cf push's flags and a manifest change of a process; nil
// changes nothing.
type ProcessChange struct {
	Instances        *int32
	MemoryMB, DiskMB *int64
	Command          *string
	HealthCheck      *cfv1alpha1.HealthCheckType
	Endpoint         *string
	Timeout          *int32
}

// Empty says whether the change changes nothing.
func (c ProcessChange) Empty() bool { return c == ProcessChange{} }

// LimitsChange says whether the change gives instances other limits or another health check,
// which replaces them one at a time.
func (c ProcessChange) LimitsChange() bool {
	return c.MemoryMB != nil || c.DiskMB != nil || c.HealthCheck != nil || c.Endpoint != nil
}

// Apply changes spec and says whether anything changed. An http health check keeps its
// endpoint unless one is given, and gets "/" (as Cloud Foundry's default) when it has none; the
// other types have none.
func (c ProcessChange) Apply(spec *cfv1alpha1.CFProcessSpec) bool {
	before := *spec.DeepCopy()
	set(&spec.Instances, c.Instances)
	set(&spec.MemoryMB, c.MemoryMB)
	set(&spec.DiskMB, c.DiskMB)
	set(&spec.Command, c.Command)
	set(&spec.HealthCheck.Type, c.HealthCheck)
	set(&spec.HealthCheck.Endpoint, c.Endpoint)
	set(&spec.HealthCheck.TimeoutSeconds, c.Timeout)
	switch {
	case spec.HealthCheck.Type != cfv1alpha1.HTTPHealthCheck:
		spec.HealthCheck.Endpoint = ""
	case spec.HealthCheck.Endpoint == "":
		spec.HealthCheck.Endpoint = "/"
	}
	return before != *spec
}

// set sets *field to *value, if value is set.
func set[T any](field *T, value *T) {
	if value != nil {
		*field = *value
	}
}

// ChangeProcess gives the app's process of a type what change sets, as the user, and returns
// the process and whether it changed. A web process that cf-hnc has not made yet is made here
// for a change, as cf-hnc makes it (cfv1alpha1.NewWebProcess): cf-hnc then keeps its spec. A
// process that is not there is NotFoundError.
func ChangeProcess(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp, processType string, change ProcessChange) (*cfv1alpha1.CFProcess, bool, error) {
	p := &cfv1alpha1.CFProcess{}
	key := client.ObjectKey{Namespace: app.Namespace, Name: cfv1alpha1.ProcessName(app.Name, processType)}
	err := c.Get(ctx, key, p)
	if apierrors.IsNotFound(err) && processType == cfv1alpha1.WebProcessType && !change.Empty() {
		p = cfv1alpha1.NewWebProcess(app)
		change.Apply(&p.Spec)
		if err = c.Create(ctx, p); err == nil {
			return p, true, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, false, about(ProcessResource, err)
		}
		err = c.Get(ctx, key, p) // cf-hnc made it meanwhile: change it as it is
	}
	if apierrors.IsNotFound(err) {
		return nil, false, &NotFoundError{Resource: ProcessResource}
	}
	if err != nil {
		return nil, false, about(ProcessResource, err)
	}
	changed, err := UpdateProcess(ctx, c, p, change)
	return p, changed, err
}

// UpdateProcess gives a process what change sets, as the user, and says whether it changed.
func UpdateProcess(ctx context.Context, c client.Client, p *cfv1alpha1.CFProcess, change ProcessChange) (bool, error) {
	patch := client.MergeFrom(p.DeepCopy())
	if !change.Apply(&p.Spec) {
		return false, nil
	}
	return true, about(ProcessResource, c.Patch(ctx, p, patch))
}

// ProcessesIn calls visit with the processes of the spaces, as the user lists them a chunk at a
// time (eachIn), without those being deleted; a space where the user may not list them is left
// out.
func ProcessesIn(ctx context.Context, c client.Client, spaces []string, visit func(*cfv1alpha1.CFProcess)) error {
	return about(ProcessResource, eachIn(ctx, c, spaces, func() *cfv1alpha1.CFProcessList { return &cfv1alpha1.CFProcessList{} },
		func(l *cfv1alpha1.CFProcessList) []cfv1alpha1.CFProcess { return l.Items }, func(p *cfv1alpha1.CFProcess) {
			if p.DeletionTimestamp.IsZero() {
				visit(p)
			}
		}))
}

// ProcessesOf lists the processes of an app as the user, as the cf CLI lists them: web first,
// then by type; those being deleted are gone for the app.
func ProcessesOf(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp) ([]cfv1alpha1.CFProcess, error) {
	list := &cfv1alpha1.CFProcessList{}
	if err := c.List(ctx, list, client.InNamespace(app.Namespace)); err != nil {
		return nil, about(ProcessResource, err)
	}
	return OfApp(list.Items, app.Name), nil
}

// OfApp are the processes of the app with a GUID among processes, web first, then by type;
// those being deleted are gone for the app.
func OfApp(processes []cfv1alpha1.CFProcess, app string) []cfv1alpha1.CFProcess {
	var of []cfv1alpha1.CFProcess
	for _, p := range processes {
		if p.Spec.AppRef.Name == app && p.DeletionTimestamp.IsZero() {
			of = append(of, p)
		}
	}
	slices.SortFunc(of, func(a, b cfv1alpha1.CFProcess) int {
		return cmp.Or(CompareProcessTypes(a.Spec.ProcessType, b.Spec.ProcessType), cmp.Compare(a.Name, b.Name))
	})
	return of
}

// CompareProcessTypes orders process types as the cf CLI shows them: web first, then by name.
func CompareProcessTypes(a, b string) int {
	notWeb := func(t string) int {
		if t == cfv1alpha1.WebProcessType {
			return 0
		}
		return 1
	}
	return cmp.Or(cmp.Compare(notWeb(a), notWeb(b)), cmp.Compare(a, b))
}

// RunningDroplet is the droplet that a process runs, decided as cf-hnc decides it, from its app
// as it is now: the app's current droplet while it is started, "" while it is stopped. The
// process's status may not have caught up with a start, a stop or a new droplet yet. A process
// whose app the user cannot read (app nil) runs what its status says.
func RunningDroplet(p *cfv1alpha1.CFProcess, app *cfv1alpha1.CFApp) string {
	switch {
	case app == nil:
		return p.Status.Droplet
	case app.Spec.DesiredState == cfv1alpha1.StartedState:
		return app.Spec.CurrentDropletRef.Name
	}
	return ""
}

// Instances are the instances of a process as Cloud Controller counts them
// (cloud_controller_ng:lib/cloud_controller/diego/reporters/instances_stats_reporter.rb): one per
// index below the process's instances, in their order. droplet is the droplet the process runs
// (RunningDroplet). While it runs one, each instance is in the state that cf-hnc reported in its
// status, unless it is being replaced (sinceStart), and DOWN until it is reported; otherwise
// every one is DOWN, as Cloud Controller fills in the instances of a process that Diego does not
// run, whatever cf-hnc still reports while it stops them.
func Instances(p *cfv1alpha1.CFProcess, droplet string) []cfv1alpha1.InstanceStatus {
	reported := map[int32]cfv1alpha1.InstanceStatus{}
	if droplet != "" {
		for _, instance := range p.Status.Instances {
			reported[instance.Index] = sinceStart(p, droplet, instance)
		}
	}
	instances := make([]cfv1alpha1.InstanceStatus, p.Spec.Instances)
	for index := range p.Spec.Instances {
		instance, ok := reported[index]
		if !ok {
			instance = cfv1alpha1.InstanceStatus{State: cfv1alpha1.InstanceDown}
		}
		instance.Index = index
		instances[index] = instance
	}
	return instances
}

// sinceStart is the instance at a reported instance's index since its app's latest start: the
// reported instance if it was made for the droplet and for that start (through the CF API);
// else the one that replaces it, STARTING, as Cloud Controller presents a new instance. In Cloud
// Foundry every instance after a start is new, and the cf CLI ends its wait after a start at the
// first RUNNING instance and fails it when all have CRASHED, so an instance from before, running
// or crashed, must count as neither. Both are compared with what the CF API wrote when it was
// asked (the app's droplet, the process's app-started-at annotation), which cf-hnc's status may
// not have caught up with. A rolling restart is no start (RestartRolling).
func sinceStart(p *cfv1alpha1.CFProcess, droplet string, instance cfv1alpha1.InstanceStatus) cfv1alpha1.InstanceStatus {
	if instance.Droplet == droplet && instance.AppStartedAt == p.Annotations[cfv1alpha1.AppStartedAtAnnotation] {
		return instance
	}
	return cfv1alpha1.InstanceStatus{Index: instance.Index, State: cfv1alpha1.InstanceStarting}
}

// AppOfProcess reads the app of a process as the user; nil if the user cannot read it.
func AppOfProcess(ctx context.Context, c client.Client, p *cfv1alpha1.CFProcess) (*cfv1alpha1.CFApp, error) {
	app := &cfv1alpha1.CFApp{}
	err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.AppRef.Name}, app)
	switch {
	case unreadable(err):
		return nil, nil
	case err != nil:
		return nil, about(AppResource, err)
	}
	return app, nil
}
