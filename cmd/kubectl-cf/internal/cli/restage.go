package cli

import (
	"context"
	"fmt"
	"time"

	"code.cloudfoundry.org/cf-hnc/cf"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

func newRestageCommand(s *session) *cobra.Command {
	var timeout, waitTimeout time.Duration
	cmd := appCommand(s, &cobra.Command{
		Use:   "restage APP -o ORG -s SPACE",
		Short: "Stage the app's current package again and run the droplet, or run its held droplet",
		Long: `Restage an app as Cloud Foundry does: stage its current package (the newest it was pushed with)
again, and run the droplet.

When kpack rebuilt the app's droplet for new buildpacks or a new lifecycle and the org's
buildpack upgrade policy is Held (kubectl cf set-upgrade-policy), cf-hnc keeps that droplet
staged and held (kubectl cf apps shows it). If it was built from the current package, it is
exactly what staging again would give: restage then runs it at once, without a build. Otherwise
it creates a build of the current package and follows it, as push does. Either way the app is
started with the droplet, and restage waits until an instance of each process runs it.`,
		Example: `  kubectl cf restage web -o acme -s dev`,
	}, true, func(ctx context.Context, a *appContext) error {
		return restage(ctx, a, timeout, waitTimeout, cfv1alpha1.StartedState)
	})
	stagingTimeoutFlag(cmd, &timeout)
	waitTimeoutFlag(cmd, &waitTimeout)
	return cmd
}

// currentPackage is the app's newest uploaded package, which CF stages on a restage.
func currentPackage(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp) (*cfv1alpha1.CFPackage, error) {
	pkg, err := cf.NewestPackage(ctx, c, app)
	if err == nil && pkg == nil {
		return nil, fmt.Errorf("app %q has no package to stage: push it first", app.Spec.DisplayName)
	}
	return pkg, err
}

// heldDroplet is the app's held droplet if it is what staging pkg again would give
// (cf.HeldDropletFor).
func heldDroplet(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp, pkg *cfv1alpha1.CFPackage) (*cfv1alpha1.CFBuild, error) {
	held, err := cf.HeldDropletFor(ctx, c, app, pkg)
	if err != nil {
		return nil, fmt.Errorf("reading the held droplet %s: %w", app.Status.HeldDropletRef.Name, err)
	}
	return held, nil
}
