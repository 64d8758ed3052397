package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

func newRestageOrgCommand(s *session) *cobra.Command {
	var timeout, waitTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "restage-org ORG",
		Short: "Restage every app of an org, one at a time, as kubectl cf restage does",
		Long: `Restage every app of every space of an org, one app at a time, as kubectl cf restage restages
one: run its held droplet when that is what staging its current package again would give, else
stage the current package with what the space's default Builder gives now. A started app is
followed until an instance of each process runs the new droplet; a stopped app stays stopped.

This is the operator's step of a stack migration: kpack does not rebuild an app when only its
Builder changes, so apps that built with another Builder than the one now placed for their
space (the root's, before a Builder was placed in the org) move to it only when they are
restaged. An app that does not restage (no package, a failed build) is reported and the others
go on; the command then fails, naming each of them.`,
		Example:           `  kubectl cf restage-org acme`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: s.completeOrgArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, org, err := s.clientAndOrg(ctx, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			apps, err := appsOfOrg(ctx, s, c, org, out)
			if err != nil {
				return err
			}
			var failed []error
			for i, a := range apps {
				fmt.Fprintf(out, "[%d/%d] app %q in %s\n", i+1, len(apps), a.app.Spec.DisplayName, a.target)
				if err := restage(ctx, a, timeout, waitTimeout, a.app.Spec.DesiredState); err != nil {
					fmt.Fprintf(out, "Error: %v\n", err)
					failed = append(failed, fmt.Errorf("app %q in space %q: %w", a.app.Spec.DisplayName, a.target.space.Spec.DisplayName, err))
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("%d of the %d apps of org %q did not restage:\n%w", len(failed), len(apps), org.Spec.DisplayName, errors.Join(failed...))
			}
			fmt.Fprintf(out, "Restaged the %d apps of org %q.\n", len(apps), org.Spec.DisplayName)
			return nil
		},
	}
	stagingTimeoutFlag(cmd, &timeout)
	waitTimeoutFlag(cmd, &waitTimeout)
	return cmd
}

// appsOfOrg are the apps of every space of an org, as app commands find them with --org and
// --space, by space name and then app name.
func appsOfOrg(ctx context.Context, s *session, c client.Client, org *cfv1alpha1.CFOrg, out io.Writer) ([]*appContext, error) {
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := c.List(ctx, spaces, client.InNamespace(org.Name)); err != nil {
		return nil, fmt.Errorf("listing the spaces of org %q: %w", org.Spec.DisplayName, err)
	}
	slices.SortFunc(spaces.Items, func(a, b cfv1alpha1.CFSpace) int { return byDisplayName(&a, &b) })
	var found []*appContext
	for i := range spaces.Items {
		space := &spaces.Items[i]
		apps := &cfv1alpha1.CFAppList{}
		if err := c.List(ctx, apps, client.InNamespace(space.Name)); err != nil {
			return nil, fmt.Errorf("listing the apps of space %q: %w", space.Spec.DisplayName, err)
		}
		slices.SortFunc(apps.Items, byAppName)
		for j := range apps.Items {
			found = append(found, &appContext{
				s:      s,
				c:      c,
				out:    out,
				flags:  &targetFlags{org: org.Spec.DisplayName, space: space.Spec.DisplayName},
				target: target{orgName: org.Spec.DisplayName, space: space},
				app:    &apps.Items[j],
			})
		}
	}
	return found, nil
}

// restage restages an app as Cloud Foundry does: it runs the app's held droplet if that is
// what staging its current package again would give, else stages that package again; then the
// app is in state with the droplet, and a started one is followed until it runs it.
func restage(ctx context.Context, a *appContext, timeout, waitTimeout time.Duration, state cfv1alpha1.DesiredState) error {
	pkg, err := currentPackage(ctx, a.c, a.app)
	if err != nil {
		return err
	}
	held, err := heldDroplet(ctx, a.c, a.app, pkg)
	if err != nil {
		return err
	}
	d := &deployment{s: a.s, c: a.c, out: a.out, app: a.app, pkg: pkg.Name, timeout: timeout,
		state: state, waitTimeout: waitTimeout, hint: a.logsHint()}
	if held != nil {
		fmt.Fprintf(a.out, "App %q now runs its held droplet %s, which kpack rebuilt from its current package because of %s; "+
			"nothing needed staging.\n", a.app.Spec.DisplayName, held.Name, held.Annotations[cfv1alpha1.RebuildReasonAnnotation])
		return d.runDroplet(ctx, held)
	}
	if err := checkBuildReady(a.target); err != nil {
		return err
	}
	fmt.Fprintf(a.out, "Restaging app %q in %s\n", a.app.Spec.DisplayName, a.target)
	return d.run(ctx)
}
