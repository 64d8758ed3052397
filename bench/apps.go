package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
)

// appSource is a static site, as `cf push` uploads its bits: the cf-hnc/staticfile buildpack
// detects its Staticfile, and a real build pod runs the CNB lifecycle on it.
var appSource = map[string]string{"Staticfile": "", "index.html": "<h1>bench</h1>\n"}

// deployApps pushes the apps, spread over the orgs and their spaces, and waits until each runs
// the droplet of its build, with its one instance running, as `cf push` leaves an app: what a
// stack fix then has to rebase and roll.
// Then it reads the run time of each build's pod from the apiserver.
func (b *bench) deployApps(ctx context.Context, r *Results) error {
	start := time.Now()
	b.apps = make([]*cfv1alpha1.CFApp, b.cfg.apps)
	pushed := make([]deployed, b.cfg.apps)
	err := parallel(ctx, b.cfg.workers, b.cfg.apps, func(ctx context.Context, i int) error {
		org := b.orgs[i%len(b.orgs)]
		spaces := b.spaces[org]
		var err error
		pushed[i], err = b.deployApp(ctx, org, spaces[(i/len(b.orgs))%len(spaces)])
		b.apps[i] = pushed[i].app
		return err
	})
	r.Apps = Apps{Count: b.cfg.apps, DeploySeconds: time.Since(start).Seconds()}
	if err != nil {
		return err
	}
	staging, running, pods := make([]time.Duration, len(pushed)), make([]time.Duration, len(pushed)), make([]time.Duration, len(pushed))
	for i, p := range pushed {
		staging[i], running[i] = p.staging, p.running
		if pods[i], err = b.buildPodRunTime(ctx, p.build.Namespace, p.build.Status.KpackBuild); err != nil {
			return fmt.Errorf("CFBuild %s: %w", p.build.Name, err)
		}
	}
	r.Apps.Build = distribution("CFBuild created → Succeeded", staging)
	r.Apps.BuildPod = distribution("kpack build pod run", pods)
	r.Apps.Running = distribution("droplet set → instance running", running)
	return nil
}

// deployed is an app that the bench pushed, with the CFBuild that staged its droplet.
type deployed struct {
	app   *cfv1alpha1.CFApp
	build *cfv1alpha1.CFBuild
	// staging is from the CFBuild's create call until the bench saw it Succeeded.
	staging time.Duration
	// running is from the update that set the app's droplet until the bench saw its web
	// process Running on it.
	running time.Duration
}

// deployApp creates an app, uploads its source, stages it and sets its droplet.
func (b *bench) deployApp(ctx context.Context, org, space string) (deployed, error) {
	app := &cfv1alpha1.CFApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFAppSpec{DisplayName: "app", DesiredState: cfv1alpha1.StartedState,
			Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}},
	}
	if err := b.k8s.Create(ctx, app); err != nil {
		return deployed{}, err
	}
	if err := b.scaleWeb(ctx, app); err != nil {
		return deployed{}, err
	}
	source, err := b.uploadSource(ctx, org)
	if err != nil {
		return deployed{}, err
	}
	pkg := &cfv1alpha1.CFPackage{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: app.Name},
			Source: cfv1alpha1.PackageSource{Registry: cfv1alpha1.Registry{Image: source,
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: orgSecret}}}}},
	}
	build := &cfv1alpha1.CFBuild{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: app.Name},
			PackageRef: corev1.LocalObjectReference{Name: pkg.Name}, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}},
	}
	if err := b.k8s.Create(ctx, pkg); err != nil {
		return deployed{}, err
	}
	created := time.Now()
	if err := b.k8s.Create(ctx, build); err != nil {
		return deployed{}, err
	}
	var succeeded time.Time
	if err := b.seen.wait(ctx, 5*time.Minute, "build "+build.Name+" succeeded", func() bool {
		var ok bool
		succeeded, ok = b.seen.arrival(buildSucceeded, build.Namespace, build.Name)
		return ok
	}); err != nil {
		return deployed{}, err
	}
	if err := b.k8s.Get(ctx, client.ObjectKeyFromObject(build), build); err != nil {
		return deployed{}, err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := b.k8s.Get(ctx, client.ObjectKeyFromObject(app), app); err != nil {
			return err
		}
		app.Spec.CurrentDropletRef.Name = build.Name
		return b.k8s.Update(ctx, app)
	})
	if err != nil {
		return deployed{}, err
	}
	set := time.Now()
	if err := b.seen.wait(ctx, 2*time.Minute, "app "+app.Name+" on its droplet", func() bool {
		return b.runs(ctx, app, "")
	}); err != nil {
		return deployed{}, err
	}
	var running time.Time
	err = b.seen.wait(ctx, 2*time.Minute, "the instance of app "+app.Name+" running its droplet", func() bool {
		var ok bool
		running, ok = b.instancesRunning(ctx, app)
		return ok
	})
	return deployed{app: app, build: build, staging: succeeded.Sub(created), running: running.Sub(set)}, err
}

// webMemoryMB is the memory of each app's one instance: a hundred instances of CF's default
// of 1 GiB would not fit the bench's one node, and the static site needs little.
const webMemoryMB = 64

// scaleWeb gives the app's web process one small instance, as `cf push -m 64M` does, before
// the app has a droplet to run: made here, or changed if cf-hnc made it first.
func (b *bench) scaleWeb(ctx context.Context, app *cfv1alpha1.CFApp) error {
	web := cfv1alpha1.NewWebProcess(app)
	web.Spec.MemoryMB, web.Spec.DiskMB = webMemoryMB, 256
	spec := web.Spec
	if err := b.k8s.Create(ctx, web); !apierrors.IsAlreadyExists(err) {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := b.k8s.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
			return err
		}
		web.Spec = spec
		return b.k8s.Update(ctx, web)
	})
}

// instancesRunning says when the last of the apps' web processes was first seen Running on its
// app's current droplet, once every one of them reports each instance on that droplet's image.
// It re-reads the apps.
func (b *bench) instancesRunning(ctx context.Context, apps ...*cfv1alpha1.CFApp) (time.Time, bool) {
	keys := make([]string, len(apps))
	for i, app := range apps {
		web, droplet := &cfv1alpha1.CFProcess{}, &cfv1alpha1.CFBuild{}
		name := cfv1alpha1.ProcessName(app.Name, cfv1alpha1.WebProcessType)
		if b.k8s.Get(ctx, client.ObjectKeyFromObject(app), app) != nil ||
			b.k8s.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: name}, web) != nil ||
			b.k8s.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: app.Spec.CurrentDropletRef.Name}, droplet) != nil ||
			!runsDroplet(web, droplet) {
			return time.Time{}, false
		}
		keys[i] = runningKey(app.Namespace, name, droplet.Name)
	}
	return b.seen.lastArrival(keys...)
}

// runsDroplet says whether a process reports Running for its spec on the droplet, with each
// instance it wants on the droplet's image.
func runsDroplet(p *cfv1alpha1.CFProcess, droplet *cfv1alpha1.CFBuild) bool {
	running := meta.FindStatusCondition(p.Status.Conditions, cfv1alpha1.RunningCondition)
	if running == nil || running.Status != metav1.ConditionTrue || running.ObservedGeneration != p.Generation ||
		p.Status.Droplet != droplet.Name || droplet.Status.Droplet == nil || len(p.Status.Instances) != int(p.Spec.Instances) {
		return false
	}
	return !slices.ContainsFunc(p.Status.Instances, func(i cfv1alpha1.InstanceStatus) bool {
		return i.Image != droplet.Status.Droplet.Registry.Image
	})
}

// runs says whether the app runs a droplet that is up to date, on the run image whose digest
// is given, if one is.
func (b *bench) runs(ctx context.Context, app *cfv1alpha1.CFApp, runImageDigest string) bool {
	if b.k8s.Get(ctx, client.ObjectKeyFromObject(app), app) != nil {
		return false
	}
	current := meta.FindStatusCondition(app.Status.Conditions, cfv1alpha1.DropletCurrentCondition)
	if current == nil || current.Reason != cfv1alpha1.UpToDateReason || current.ObservedGeneration != app.Generation {
		return false
	}
	return runImageDigest == "" || app.Status.Droplet != nil && strings.HasSuffix(app.Status.Droplet.RunImage, "@"+runImageDigest)
}

// uploadSource pushes the app's source with the org's registry account, as the CF API does
// with uploaded bits, and returns its reference.
func (b *bench) uploadSource(ctx context.Context, org string) (string, error) {
	account := controlplane.OrgsRepository + "/" + org
	return b.cp.Kpack().Registry.PushSource(ctx, account+"/packages/"+string(uuid.NewUUID()), appSource, account, b.cp.Kpack().TenantPassword)
}
