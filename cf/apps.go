package cf

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// LifecycleChange is what a push, a manifest or a request changes of an app's lifecycle; nil
// changes nothing.
type LifecycleChange struct {
	Buildpacks *[]string
	Stack      *string
}

// defaultBuildpack is what the cf CLI and manifests write for the default buildpacks.
var defaultBuildpack = regexp.MustCompile(`^(default|null)$`)

// IsDefaultBuildpack says whether a buildpack name asks for the space's default Builder.
func IsDefaultBuildpack(name string) bool { return defaultBuildpack.MatchString(name) }

// Apply changes data and says whether anything changed. No buildpacks, or "default" (or
// "null") alone, detect with the space's default Builder.
func (c LifecycleChange) Apply(data *cfv1alpha1.LifecycleData) bool {
	before := *data.DeepCopy()
	if c.Buildpacks != nil {
		data.Buildpacks = slices.DeleteFunc(slices.Clone(*c.Buildpacks), IsDefaultBuildpack)
		if len(data.Buildpacks) == 0 {
			data.Buildpacks = nil
		}
	}
	if c.Stack != nil {
		data.Stack = *c.Stack
	}
	return before.Stack != data.Stack || !slices.Equal(before.Buildpacks, data.Buildpacks)
}

// CheckLifecycleType refuses a lifecycle other than buildpacks (CF's buildpack lifecycle, or
// its newer cnb one, which cf-hnc's buildpack lifecycle is).
func CheckLifecycleType(t string) error {
	switch t {
	case "", string(cfv1alpha1.BuildpackLifecycle), "cnb":
		return nil
	}
	return unprocessable("cf-hnc stages apps with buildpacks only: lifecycle %q is not supported", t)
}

// NewApp is a new app of a space, named with a new GUID, stopped until it has a droplet, as
// Cloud Foundry creates apps, with the lifecycle that change sets.
func NewApp(space, name string, change LifecycleChange) *cfv1alpha1.CFApp {
	app := &cfv1alpha1.CFApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: newGUID("")},
		Spec: cfv1alpha1.CFAppSpec{
			DisplayName:  name,
			DesiredState: cfv1alpha1.StoppedState,
			Lifecycle:    cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle},
		},
	}
	change.Apply(&app.Spec.Lifecycle.Data)
	return app
}

// CreateApp creates a new app in a space as the user. Its name must be free in the space, as
// Cloud Foundry's app names are (NameTakenError).
func CreateApp(ctx context.Context, c client.Client, space, name string, change LifecycleChange) (*cfv1alpha1.CFApp, error) {
	owner, err := AppNamed(ctx, c, space, name)
	if err != nil {
		return nil, err
	}
	if owner != nil {
		return nil, &NameTakenError{Resource: AppResource, Name: name}
	}
	app := NewApp(space, name, change)
	return app, about(AppResource, c.Create(ctx, app))
}

// AppsIn calls visit with the apps of the spaces, as the user lists them a chunk at a time
// (eachIn), without those being deleted; a space where the user may not list them is left out.
func AppsIn(ctx context.Context, c client.Client, spaces []string, visit func(*cfv1alpha1.CFApp)) error {
	return about(AppResource, eachIn(ctx, c, spaces, func() *cfv1alpha1.CFAppList { return &cfv1alpha1.CFAppList{} },
		func(l *cfv1alpha1.CFAppList) []cfv1alpha1.CFApp { return l.Items }, func(app *cfv1alpha1.CFApp) {
			if app.DeletionTimestamp.IsZero() {
				visit(app)
			}
		}))
}

// AppNamed returns the app of a space that owns a name, as Cloud Foundry compares names
// (DisplayNameOwner), read as the user; nil if none does.
func AppNamed(ctx context.Context, c client.Client, space, name string) (*cfv1alpha1.CFApp, error) {
	apps := &cfv1alpha1.CFAppList{}
	if err := c.List(ctx, apps, client.InNamespace(space)); err != nil {
		return nil, about(AppResource, err)
	}
	return cfv1alpha1.DisplayNameOwner(apps.Items, name), nil
}

// FindApp returns the app of a space that key names, by GUID or by name, as the user; nil if
// none does.
func FindApp(ctx context.Context, c client.Client, space, key string) (*cfv1alpha1.CFApp, error) {
	apps := &cfv1alpha1.CFAppList{}
	if err := c.List(ctx, apps, client.InNamespace(space)); err != nil {
		return nil, fmt.Errorf("listing apps: %w", err)
	}
	return Lookup(apps.Items, key), nil
}

// PatchApp changes an app's spec as change does, as the user, writing only what changed.
func PatchApp(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp, change func(*cfv1alpha1.CFAppSpec)) error {
	patch := client.MergeFrom(app.DeepCopy())
	change(&app.Spec)
	return about(AppResource, c.Patch(ctx, app, patch))
}

// SetState sets the app's desired state as the user, as cf start, cf stop and cf restart do. An
// app starts only with a current droplet (NoDropletError). Starting a stopped app, and
// restarting it (anew), replace the instances of its processes that run its current droplet
// already (RestartAnew): cf restart and cf restage stop the app and start it again, and cf-hnc
// may see only the start, with the instances still running. Starting a started app changes
// nothing, as in Cloud Foundry.
func SetState(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp, state cfv1alpha1.DesiredState, anew bool) error {
	if state == cfv1alpha1.StartedState && app.Spec.CurrentDropletRef.Name == "" {
		return &NoDropletError{App: app.Spec.DisplayName}
	}
	if state == cfv1alpha1.StartedState && (anew || app.Spec.DesiredState != state) {
		if err := RestartAnew(ctx, c, app, time.Now()); err != nil {
			return err
		}
	}
	if app.Spec.DesiredState == state {
		return nil
	}
	return PatchApp(ctx, c, app, func(spec *cfv1alpha1.CFAppSpec) { spec.DesiredState = state })
}

// The two ways to restart an app's instances. A start through the CF API makes every instance
// anew, as in Cloud Foundry: the CF API reports the instances made before it as STARTING while
// they are replaced (Instances), and the cf CLI, which waits after a start for an instance that
// runs, takes none of them for a new one. A rolling restart (kubectl cf restart) replaces the
// instances one at a time, and those not replaced yet keep running, as in a rolling deployment
// of Cloud Foundry. Either way cf-hnc copies the process's annotation onto its instances' pod
// template, which replaces them one at a time.

// RestartAnew marks the app's processes that run its current droplet with the time of a start
// (AppStartedAtAnnotation), as the user, before the app is started: cf-hnc then does not start
// them twice, and a process that cf-hnc has stopped starts its instances from the marked
// template. Instances still to be moved to the current droplet are replaced by that move.
func RestartAnew(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp, now time.Time) error {
	processes, err := ProcessesOf(ctx, c, app)
	if err != nil {
		return err
	}
	processes = slices.DeleteFunc(processes, func(p cfv1alpha1.CFProcess) bool { return p.Status.Droplet != app.Spec.CurrentDropletRef.Name })
	return annotate(ctx, c, processes, cfv1alpha1.AppStartedAtAnnotation, now)
}

// RestartRolling marks processes with the time of a rolling restart (RestartedAtAnnotation), as
// the user: cf-hnc replaces their instances one at a time.
func RestartRolling(ctx context.Context, c client.Client, processes []cfv1alpha1.CFProcess, now time.Time) error {
	return annotate(ctx, c, processes, cfv1alpha1.RestartedAtAnnotation, now)
}

func annotate(ctx context.Context, c client.Client, processes []cfv1alpha1.CFProcess, key string, now time.Time) error {
	at := now.UTC().Format(time.RFC3339Nano)
	for i := range processes {
		p := &processes[i]
		patch := client.MergeFrom(p.DeepCopy())
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, key, at)
		if err := c.Patch(ctx, p, patch); err != nil {
			return fmt.Errorf("restarting the %s process: %w", p.Spec.ProcessType, about(ProcessResource, err))
		}
	}
	return nil
}
