package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"code.cloudfoundry.org/cf-hnc/cf"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// pushOptions are the flags of push.
type pushOptions struct {
	target      targetFlags
	path        string
	buildpacks  []string
	stack       string
	timeout     time.Duration
	process     processFlags
	noStart     bool
	waitTimeout time.Duration
	// change is what the process flags change of the app's web process.
	change cf.ProcessChange
}

func newPushCommand(s *session) *cobra.Command {
	o := &pushOptions{}
	cmd := &cobra.Command{
		Use:   "push APP -o ORG -s SPACE [-p DIR] [-b BUILDPACK ...] [--stack STACK] [-i N] [-m MEM] [-k DISK] [-u TYPE] [--no-start]",
		Short: "Upload an app's source, stage it with kpack and run the droplet",
		Long: `Push an app as the CF API does: find the app APP in the space (names are unique per space, ignoring
case) or create it; upload the directory DIR (default: the current one) as a package, leaving out
what .cfignore (gitignore syntax) and the cf CLI's default exclusions name; stage the package in a
build, following it; and once it staged, make the droplet the app's current one, start the app and
wait until an instance of each of its processes runs.

-b and --stack set the app's lifecycle, as cf push does: the buildpacks (ids of the space's
ClusterStore, in detection order; "-b default" goes back to detecting with the space's default
Builder) and the stack (a ClusterStack). Without them the app keeps its lifecycle. Both are
checked by cf-hnc's admission before anything is uploaded.

-i, -m, -k, -u and --endpoint set the app's web process: its instances, each one's memory and disk
limits (256M, 1G), and its health check; once the droplet staged, before the app runs it. A new
app's web process gets 1 instance, 1G memory, 1G disk and a port health check unless they say
otherwise; an app's process keeps what the flags do not change. --no-start stages the droplet and
makes it current, but leaves the app stopped (a started app is stopped).

Started, the app runs its droplet: push shows how many instances run, and why the others do not,
until an instance of each process runs. If none has by --wait-timeout, push fails with the
reason (CrashLoop, OutOfMemory, ImagePullFailed, ...) and the command that shows what the
instances wrote; the app stays started with its new droplet.

The package is uploaded to the space's package repository with the registry credentials that
the space's builds use. Nothing is created before the space is BuildReady, the source is
packed, the lifecycle is accepted and the upload succeeded. A build that fails stays, as build
history; one that has not finished when push is interrupted or --timeout passes is deleted, with
what push created for it, so that a retry is not queued behind it. Like cf push --strategy
rolling, an app keeps its droplet until the new one has staged, and then its instances are replaced
one at a time.`,
		Example: `  kubectl cf push web -o acme -s dev -p ./web
  kubectl cf push web -o acme -s dev -i 2 -m 256M -u http --endpoint /health
  kubectl cf push web -o acme -s dev -b paketo-buildpacks/go -b paketo-buildpacks/procfile
  kubectl cf push web -n <space guid>          # the space whose namespace this is`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: s.completeApps(&o.target),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.change, err = o.process.parse(cmd); err != nil {
				return err
			}
			return o.run(cmd.Context(), s, cmd.OutOrStdout(), args[0])
		},
	}
	o.target.addFlags(cmd, s, true)
	cmd.Flags().StringVarP(&o.path, "path", "p", ".", "The directory with the app's source.")
	cmd.Flags().StringArrayVarP(&o.buildpacks, "buildpack", "b", nil,
		`A buildpack of the app's lifecycle; repeat for several, in detection order. "default" (or "null") alone: detect with the space's default Builder.`)
	cmd.Flags().StringVar(&o.stack, "stack", "", "The app's stack, a ClusterStack.")
	stagingTimeoutFlag(cmd, &o.timeout)
	o.process.addScaleFlags(cmd)
	o.process.addHealthCheckFlags(cmd)
	cmd.Flags().BoolVar(&o.noStart, "no-start", false, "Stage the droplet and make it the app's current one, but leave the app stopped.")
	waitTimeoutFlag(cmd, &o.waitTimeout)
	cobra.CheckErr(cmd.RegisterFlagCompletionFunc("buildpack", s.completeBuildpacks))
	cobra.CheckErr(cmd.RegisterFlagCompletionFunc("stack", s.completeStacks))
	return cmd
}

func (o *pushOptions) run(ctx context.Context, s *session, out io.Writer, name string) error {
	if err := o.target.check(); err != nil {
		return err
	}
	lifecycle, err := o.lifecycleChange()
	if err != nil {
		return err
	}
	source, err := packSource(o.path)
	if err != nil {
		return err
	}
	defer source.cleanup()
	c, err := s.client()
	if err != nil {
		return err
	}
	t, err := o.target.resolve(ctx, s, c)
	if err != nil {
		return err
	}
	if err := checkBuildReady(t); err != nil {
		return err
	}
	current, err := cf.FindApp(ctx, c, t.space.Name, name)
	if err != nil {
		return err
	}
	app := desiredApp(t, current, name, lifecycle)
	if err := o.validate(ctx, c, current, app); err != nil {
		return err
	}
	fmt.Fprintf(out, "Pushing app %q to %s\n", name, t)
	fmt.Fprintf(out, "Packed %s: %s\n", o.path, source)

	pkg := string(uuid.NewUUID())
	registry, err := cf.PushSource(ctx, c, t.space, app.Name, pkg, func() (string, error) { return source.tarFile, nil })
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Uploaded package %s: %s\n", pkg, registry.Image)

	d := &deployment{s: s, c: c, out: out, app: app, pkg: pkg, timeout: o.timeout,
		process: o.change, state: cfv1alpha1.StartedState, waitTimeout: o.waitTimeout, hint: logsHint(app, &o.target, t)}
	if o.noStart {
		d.state = cfv1alpha1.StoppedState
	}
	if err := o.apply(ctx, c, out, current, app, d); err != nil {
		return err
	}
	// The package is created once its bits are uploaded, as the CF API marks a package READY.
	pkgObject := cf.NewPackage(app, pkg, registry)
	if err := c.Create(ctx, pkgObject); err != nil {
		return d.abandon(ctx, fmt.Errorf("creating the package: %w", rejected(err)))
	}
	d.created = append([]client.Object{pkgObject}, d.created...)
	return d.run(ctx)
}

// lifecycleChange is what -b and --stack change of the app's lifecycle: the buildpacks, when -b
// is given ("default" alone goes back to the space's default Builder, and cannot be combined
// with buildpacks, as in the cf CLI), and the stack, when --stack is.
func (o *pushOptions) lifecycleChange() (cf.LifecycleChange, error) {
	var change cf.LifecycleChange
	if o.buildpacks != nil {
		if slices.ContainsFunc(o.buildpacks, cf.IsDefaultBuildpack) && len(o.buildpacks) > 1 {
			return change, fmt.Errorf(`-b %s: "default" detects with the space's default Builder and cannot be combined with buildpacks`,
				strings.Join(o.buildpacks, " -b "))
		}
		change.Buildpacks = &o.buildpacks
	}
	if o.stack != "" {
		change.Stack = &o.stack
	}
	return change, nil
}

// desiredApp is the app as push leaves it: the app found, with the lifecycle that -b and
// --stack set, or a new app, stopped until its droplet is staged, as the CF API creates it.
func desiredApp(t target, current *cfv1alpha1.CFApp, name string, lifecycle cf.LifecycleChange) *cfv1alpha1.CFApp {
	if current == nil {
		return cf.NewApp(t.space.Name, name, lifecycle)
	}
	app := current.DeepCopy()
	lifecycle.Apply(&app.Spec.Lifecycle.Data)
	return app
}

// validate has cf-hnc's admission check the app (its lifecycle: buildpacks of the space's store,
// an existing stack) in a dry run, before anything is uploaded.
func (o *pushOptions) validate(ctx context.Context, c client.Client, current, app *cfv1alpha1.CFApp) error {
	var err error
	if current == nil {
		err = c.Create(ctx, app.DeepCopy(), client.DryRunAll)
	} else {
		err = c.Patch(ctx, app.DeepCopy(), client.MergeFrom(current), client.DryRunAll)
	}
	if err != nil {
		return fmt.Errorf("app %q: %w", app.Spec.DisplayName, rejectedAs(err, lifecycleFlag))
	}
	return nil
}

// lifecycleFlag names the fields of an app's lifecycle by the push flags that set them.
func lifecycleFlag(field string) string {
	switch {
	case field == "spec.lifecycle.data.stack":
		return "--stack"
	case strings.HasPrefix(field, "spec.lifecycle.data.buildpacks"):
		return "--buildpack"
	}
	return field
}

// apply creates the app, or updates its lifecycle, now that its package is uploaded.
func (o *pushOptions) apply(ctx context.Context, c client.Client, out io.Writer, current, app *cfv1alpha1.CFApp, d *deployment) error {
	if current == nil {
		if err := c.Create(ctx, app); err != nil {
			return fmt.Errorf("creating app %q: %w", app.Spec.DisplayName, rejectedAs(err, lifecycleFlag))
		}
		d.created = append(d.created, app)
		fmt.Fprintf(out, "Created app %q: %s\n", app.Spec.DisplayName, app.Name)
		return nil
	}
	if !current.Spec.Lifecycle.Equal(app.Spec.Lifecycle) {
		if err := c.Patch(ctx, app, client.MergeFrom(current)); err != nil {
			return fmt.Errorf("updating app %q: %w", app.Spec.DisplayName, rejectedAs(err, lifecycleFlag))
		}
		fmt.Fprintf(out, "Updated the lifecycle of app %q: %s\n", app.Spec.DisplayName, describeLifecycle(app.Spec.Lifecycle.Data))
	}
	return nil
}

// describeLifecycle is an app's lifecycle for a person.
func describeLifecycle(d cfv1alpha1.LifecycleData) string {
	buildpacks, stack := "the default Builder's", "the default Builder's"
	if len(d.Buildpacks) > 0 {
		buildpacks = strings.Join(d.Buildpacks, ", ")
	}
	if d.Stack != "" {
		stack = d.Stack
	}
	return fmt.Sprintf("buildpacks %s, stack %s", buildpacks, stack)
}
