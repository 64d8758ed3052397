package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"code.cloudfoundry.org/cf-hnc/cf"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// The states of an app starting, as the cf CLI shows its instances.
const (
	startingState = string(cfv1alpha1.InstanceStarting)
	runningState  = string(cfv1alpha1.InstanceRunning)
	crashedState  = string(cfv1alpha1.InstanceCrashed)
	downState     = string(cfv1alpha1.InstanceDown)
)

// defaultWaitTimeout is how long a command waits for an app to run, as the cf CLI's
// CF_STARTUP_TIMEOUT.
const defaultWaitTimeout = 5 * time.Minute

// waitTimeoutFlag adds --wait-timeout, how long push, restage, start and restart wait for an
// app to run.
func waitTimeoutFlag(cmd *cobra.Command, timeout *time.Duration) {
	cmd.Flags().DurationVar(timeout, "wait-timeout", defaultWaitTimeout,
		"How long to wait for an instance of each process to run the droplet; after it the command fails, and the app stays started.")
}

func newStartCommand(s *session) *cobra.Command {
	var timeout time.Duration
	cmd := appCommand(s, &cobra.Command{
		Use:   "start APP -o ORG -s SPACE",
		Short: "Start an app: run its droplet, and wait until an instance of each process runs",
		Long: `Start an app as cf start does: set it STARTED, so that cf-hnc runs the instances of each of its
processes with its current droplet, and wait until an instance of each process runs (passes its
health check), showing how many run and why the others do not. An app without a droplet must be
staged first (kubectl cf push, or kubectl cf restage).`,
		Example: `  kubectl cf start web -o acme -s dev`,
	}, true, func(ctx context.Context, a *appContext) error {
		if a.app.Spec.DesiredState == cfv1alpha1.StartedState {
			fmt.Fprintf(a.out, "App %q is STARTED already.\n", a.app.Spec.DisplayName)
			return nil
		}
		build, err := dropletToRun(ctx, a.c, a.app)
		if err != nil {
			return err
		}
		return a.startAndWait(ctx, build, timeout, fmt.Sprintf("Starting app %q with droplet %s", a.app.Spec.DisplayName, build.Name))
	})
	waitTimeoutFlag(cmd, &timeout)
	return cmd
}

func newStopCommand(s *session) *cobra.Command {
	return appCommand(s, &cobra.Command{
		Use:   "stop APP -o ORG -s SPACE",
		Short: "Stop an app: its instances stop",
		Long: `Stop an app as cf stop does: set it STOPPED, so that cf-hnc stops every instance of its processes.
The app keeps its droplet and its processes' scale; kubectl cf start runs them again.`,
		Example: `  kubectl cf stop web -o acme -s dev`,
	}, true, func(ctx context.Context, a *appContext) error {
		if a.app.Spec.DesiredState == cfv1alpha1.StoppedState {
			fmt.Fprintf(a.out, "App %q is STOPPED already.\n", a.app.Spec.DisplayName)
			return nil
		}
		if err := setState(ctx, a.c, a.app, cfv1alpha1.StoppedState); err != nil {
			return err
		}
		fmt.Fprintf(a.out, "App %q is STOPPED: its instances stop.\n", a.app.Spec.DisplayName)
		return nil
	})
}

func newRestartCommand(s *session) *cobra.Command {
	var timeout time.Duration
	cmd := appCommand(s, &cobra.Command{
		Use:   "restart APP -o ORG -s SPACE",
		Short: "Restart an app's instances one at a time (rolling), or start a stopped app",
		Long: `Restart an app as cf restart --strategy rolling does: cf-hnc replaces the instances of each of its
processes one at a time, each new one started before the next old one stops, so that a started
app keeps serving. (It asks for that with the annotation ` + cfv1alpha1.RestartedAtAnnotation + `
on each CFProcess.) A stopped app is started. Then it waits, as start does, until an instance of
each process runs; kubectl cf app shows the instances as they are replaced.`,
		Example: `  kubectl cf restart web -o acme -s dev`,
	}, true, func(ctx context.Context, a *appContext) error {
		build, err := dropletToRun(ctx, a.c, a.app)
		if err != nil {
			return err
		}
		processes, err := appProcesses(ctx, a.c, a.app)
		if err != nil {
			return err
		}
		if err := cf.RestartRolling(ctx, a.c, processes, time.Now()); err != nil {
			return err
		}
		if a.app.Spec.DesiredState == cfv1alpha1.StartedState {
			fmt.Fprintf(a.out, "Restarting app %q: the instances of %s are replaced one at a time.\n", a.app.Spec.DisplayName, processTypes(processes))
		}
		return a.startAndWait(ctx, build, timeout, fmt.Sprintf("App %q was STOPPED: starting it with droplet %s", a.app.Spec.DisplayName, build.Name))
	})
	waitTimeoutFlag(cmd, &timeout)
	return cmd
}

// startAndWait starts the app, saying so with starting, unless it is started, and waits until
// it runs the droplet of build.
func (a *appContext) startAndWait(ctx context.Context, build *cfv1alpha1.CFBuild, timeout time.Duration, starting string) error {
	if a.app.Spec.DesiredState != cfv1alpha1.StartedState {
		if err := setState(ctx, a.c, a.app, cfv1alpha1.StartedState); err != nil {
			return err
		}
		fmt.Fprintln(a.out, starting)
	}
	return waitRunning(ctx, a.c, a.out, a.app, build, timeout, a.logsHint())
}

// processTypes names processes by type: "web and worker"; "no process" when there is none yet.
func processTypes(processes []cfv1alpha1.CFProcess) string {
	if len(processes) == 0 {
		return "no process (cf-hnc has not made the web process yet)"
	}
	types := make([]string, len(processes))
	for i, p := range processes {
		types[i] = p.Spec.ProcessType
	}
	return joinAnd(types)
}

// dropletToRun is the app's current droplet, which it runs when started: an app without one
// must be staged first, as Cloud Foundry says.
func dropletToRun(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp) (*cfv1alpha1.CFBuild, error) {
	name := app.Spec.CurrentDropletRef.Name
	if name == "" {
		return nil, fmt.Errorf("app %q has no droplet: it must be staged first (kubectl cf push, or kubectl cf restage)", app.Spec.DisplayName)
	}
	build := &cfv1alpha1.CFBuild{}
	err := c.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: name}, build)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("the droplet of app %q, build %s, is gone: it must be staged again (kubectl cf restage)", app.Spec.DisplayName, name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the droplet of app %q: %w", app.Spec.DisplayName, err)
	}
	return build, nil
}

// setState sets an app started or stopped. kubectl cf does not mark the instances of a start as
// the CF API does (cf.SetState): it starts what runs its current droplet, and restart replaces
// the instances one at a time (cf.RestartRolling).
func setState(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp, state cfv1alpha1.DesiredState) error {
	if err := cf.PatchApp(ctx, c, app, func(spec *cfv1alpha1.CFAppSpec) { spec.DesiredState = state }); err != nil {
		return fmt.Errorf("updating app %q: %w", app.Spec.DisplayName, rejected(err))
	}
	return nil
}

// waitRunning waits until an instance of each of the app's processes that has instances runs
// the droplet of build, showing how far they are. After timeout it fails with the Running
// condition of a process that does not run, and hint, the command that shows what the
// instances wrote; an interrupt leaves the app as it is.
func waitRunning(ctx context.Context, c client.Client, out io.Writer, app *cfv1alpha1.CFApp, build *cfv1alpha1.CFBuild, timeout time.Duration, hint string) error {
	image := ""
	if build.Status.Droplet != nil {
		image = build.Status.Droplet.Registry.Image
	}
	fmt.Fprintf(out, "Waiting for app %q to run (at most %s):\n", app.Spec.DisplayName, timeout)
	waiting, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var why string
	err := pollProgress(waiting, newDisplay(out), func(ctx context.Context) (progress, error) {
		processes, err := appProcesses(ctx, c, app)
		if err != nil {
			return progress{}, err
		}
		var p progress
		p, why = runProgress(processes, build.Name, image)
		return p, nil
	})
	switch {
	case errors.Is(err, errUnfinished) && ctx.Err() != nil:
		return fmt.Errorf("interrupted while waiting for app %q to run; it stays STARTED", app.Spec.DisplayName)
	case errors.Is(err, errUnfinished):
		return fmt.Errorf("app %q is not running after %s: %s; see what its instances wrote: %s", app.Spec.DisplayName, timeout, why, hint)
	}
	return err
}

// runProgress is how far an app's processes are from running the droplet (a CFBuild's name,
// and its image when known): finished once each process that has instances has one RUNNING of
// that droplet. why says, for a process that does not run yet, what its Running condition
// says.
func runProgress(processes []cfv1alpha1.CFProcess, droplet, image string) (p progress, why string) {
	if len(processes) == 0 {
		const pending = "cf-hnc has not made the app's web process yet"
		return progress{state: startingState, reason: "Pending", detail: pending}, pending
	}
	var details []string
	var first, stalled *cfv1alpha1.CFProcess
	p.state = runningState
	for i := range processes {
		process := &processes[i]
		if process.Spec.Instances == 0 {
			continue
		}
		running, detail := instancesOfDroplet(process, droplet, image)
		details = append(details, detail)
		first = cmp.Or(first, process)
		if running == 0 {
			stalled = cmp.Or(stalled, process)
			p.state = worseState(p.state, process)
		}
	}
	if first == nil {
		return progress{state: string(cfv1alpha1.StartedState), reason: "NoInstances", detail: "every process has 0 instances", finished: true}, ""
	}
	focus := cmp.Or(stalled, first)
	p.reason, why = runningReason(focus, droplet)
	p.detail = strings.Join(details, "; ")
	p.finished = p.state == runningState
	return p, why
}

// instancesOfDroplet counts a process's instances that run the droplet, and describes them:
// "web 1/2 running, instance 1 CRASHED (CrashLoop, 3 restarts)".
func instancesOfDroplet(p *cfv1alpha1.CFProcess, droplet, image string) (int, string) {
	running := 0
	var others []string
	if p.Status.Droplet == droplet {
		for _, i := range p.Status.Instances {
			if i.State == cfv1alpha1.InstanceRunning && (image == "" || i.Image == image) {
				running++
				continue
			}
			others = append(others, describeInstance(i))
		}
	}
	detail := fmt.Sprintf("%s %d/%d running", p.Spec.ProcessType, running, p.Spec.Instances)
	if len(others) > 0 {
		detail += ", " + strings.Join(others, ", ")
	}
	return running, detail
}

// describeInstance is an instance that does not run the droplet yet: "instance 0 CRASHED
// (CrashLoop, 3 restarts)".
func describeInstance(i cfv1alpha1.InstanceStatus) string {
	var why []string
	if i.Reason != "" {
		why = append(why, i.Reason)
	}
	if i.Restarts > 0 {
		why = append(why, fmt.Sprintf("%d restarts", i.Restarts))
	}
	if i.State == cfv1alpha1.InstanceRunning {
		why = append(why, "an older droplet")
	}
	text := fmt.Sprintf("instance %d %s", i.Index, i.State)
	if len(why) > 0 {
		text += " (" + strings.Join(why, ", ") + ")"
	}
	return text
}

// worseState is the state shown for an app of which a process runs no instance yet: CRASHED
// when an instance of it crashed, DOWN when one cannot start, else STARTING.
func worseState(state string, p *cfv1alpha1.CFProcess) string {
	rank := map[string]int{runningState: 0, startingState: 1, downState: 2, crashedState: 3}
	worst := startingState
	for _, i := range p.Status.Instances {
		if s := string(i.State); rank[s] > rank[worst] {
			worst = s
		}
	}
	if rank[worst] > rank[state] {
		return worst
	}
	return state
}

// runningReason is the reason of a process's Running condition and, for an error, the
// condition with its message; Pending while cf-hnc has not reported on the droplet's instances
// (or still reports the app stopped, or without a droplet: a command waits only on an app that
// it has started with one).
func runningReason(p *cfv1alpha1.CFProcess, droplet string) (reason, why string) {
	c := meta.FindStatusCondition(p.Status.Conditions, cfv1alpha1.RunningCondition)
	if c == nil || p.Status.Droplet != droplet || c.Reason == cfv1alpha1.AppStoppedReason || c.Reason == cfv1alpha1.NoDropletToRunReason {
		return "Pending", fmt.Sprintf("process %s: cf-hnc has not reported on its instances of droplet %s yet", p.Spec.ProcessType, droplet)
	}
	return c.Reason, fmt.Sprintf("process %s: Running is %s", p.Spec.ProcessType, describe(c))
}
