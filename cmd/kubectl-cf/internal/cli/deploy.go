package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"code.cloudfoundry.org/cf-hnc/cf"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// cleanupTimeout bounds the deletion of what an unfinished push or restage created, which runs
// after an interrupt has already ended the command's context.
const cleanupTimeout = 30 * time.Second

// deployment stages a package of an app, as push and restage do, and makes the app run the
// droplet: it creates the CFBuild, follows it, sets the app's current droplet and waits until
// the app runs it.
type deployment struct {
	s       *session
	c       client.Client
	out     io.Writer
	app     *cfv1alpha1.CFApp
	pkg     string
	timeout time.Duration
	// created are what the command created before the build (a package, an app), newest
	// first: if the build does not finish, they are deleted with it, so that nothing is left
	// for a retry to trip over.
	created []client.Object
	// process is what push's flags change of the web process, once the droplet staged.
	process cf.ProcessChange
	// state is the app's state once the droplet staged: STARTED, or STOPPED for push --no-start.
	state cfv1alpha1.DesiredState
	// waitTimeout is how long to wait for a started app to run; hint shows what its
	// instances wrote.
	waitTimeout time.Duration
	hint        string
}

// stagingTimeoutFlag adds --timeout, how long push and restage wait for staging.
func stagingTimeoutFlag(cmd *cobra.Command, timeout *time.Duration) {
	cmd.Flags().DurationVar(timeout, "timeout", 15*time.Minute,
		"How long to wait for staging. A build that has not finished by then (or when interrupted) is deleted, with what the command created for it.")
}

// run creates the build, follows it and, once it staged, points the app at its droplet and
// starts it.
func (d *deployment) run(ctx context.Context) error {
	build := cf.NewBuild(d.app, d.pkg)
	if err := d.c.Create(ctx, build); err != nil {
		return d.abandon(ctx, fmt.Errorf("creating the build: %w", rejected(err)))
	}
	d.created = append([]client.Object{build}, d.created...)
	fmt.Fprintf(d.out, "Staging build %s of package %s:\n", build.Name, d.pkg)

	f := &follower{c: d.c, clientset: d.s.clientset, out: d.out, display: newDisplay(d.out)}
	staging, cancel := context.WithTimeoutCause(ctx, d.timeout, fmt.Errorf("staging did not finish within %s", d.timeout))
	defer cancel()
	build, kb, err := f.follow(staging, build)
	switch {
	case errors.Is(err, errUnfinished) && ctx.Err() != nil:
		return d.abandon(ctx, errors.New("interrupted while staging"))
	case errors.Is(err, errUnfinished):
		return d.abandon(ctx, context.Cause(staging))
	case err != nil:
		return d.abandon(ctx, err)
	}
	if state, succeeded := build.State(); state == cfv1alpha1.BuildFailed {
		// A failed build is history, as in Cloud Foundry: it stays, with its package, and as it
		// has finished it queues no later build.
		f.printFailure(ctx, build, kb)
		return fmt.Errorf("staging app %q failed: %s: %s", d.app.Spec.DisplayName, succeeded.Reason, succeeded.Message)
	}
	return d.runDroplet(ctx, build)
}

// runDroplet sets the app's current droplet and starts it, as the CF API's push does once the
// droplet is staged (with what push's flags change of its web process first), shows the droplet,
// and waits until the app runs it.
func (d *deployment) runDroplet(ctx context.Context, build *cfv1alpha1.CFBuild) error {
	if !d.process.Empty() {
		p, _, err := applyProcess(ctx, d.c, d.app, cfv1alpha1.WebProcessType, d.process)
		if err != nil {
			return err
		}
		fmt.Fprintf(d.out, "Process web: %s; health check %s\n", describeScale(p.Spec), describeHealthCheck(p.Spec.HealthCheck))
	}
	if err := cf.RunDroplet(ctx, d.c, d.app, build.Name, d.state); err != nil {
		return fmt.Errorf("updating app %q: %w", d.app.Spec.DisplayName, rejected(err))
	}
	fmt.Fprintf(d.out, "App %q is %s with droplet %s:\n", d.app.Spec.DisplayName, d.app.Spec.DesiredState, build.Name)
	printDroplet(d.out, build)
	if d.state != cfv1alpha1.StartedState {
		return nil
	}
	return waitRunning(ctx, d.c, d.out, d.app, build, d.waitTimeout, d.hint)
}

// abandon deletes what the command created for a build that did not finish (the build first,
// so that no later build of the app is queued behind it) and returns cause with what it did.
func (d *deployment) abandon(ctx context.Context, cause error) error {
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var deleted []string
	var errs []error
	for _, obj := range d.created {
		err := client.IgnoreNotFound(d.c.Delete(cleanup, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)))
		if err != nil {
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", kindOf(obj), obj.GetName(), err))
			continue
		}
		deleted = append(deleted, kindOf(obj)+" "+obj.GetName())
	}
	if len(deleted) > 0 {
		cause = fmt.Errorf("%w; deleted %s, so that a retry is not queued behind them", cause, joinAnd(deleted))
	}
	return errors.Join(append([]error{cause}, errs...)...)
}

// kindOf names an object's kind as Cloud Foundry does.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *cfv1alpha1.CFBuild:
		return "build"
	case *cfv1alpha1.CFPackage:
		return "package"
	case *cfv1alpha1.CFApp:
		return "app"
	}
	return fmt.Sprintf("%T", obj)
}

// joinAnd joins items as "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
