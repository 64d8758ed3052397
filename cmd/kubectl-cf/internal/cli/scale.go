package cli

import (
	"context"
	"fmt"

	"code.cloudfoundry.org/cf-hnc/cf"

	"github.com/spf13/cobra"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

func newScaleCommand(s *session) *cobra.Command {
	var flags processFlags
	var change cf.ProcessChange
	var processType string
	cmd := appCommand(s, &cobra.Command{
		Use:   "scale APP -o ORG -s SPACE [-i INSTANCES] [-m MEMORY] [-k DISK] [--process TYPE]",
		Short: "Change or show how many instances of an app's process run, and their memory and disk",
		Long: `Scale a process of an app (its web process unless --process names another type), as cf scale
does: -i sets how many instances run while the app is started, -m and -k each instance's memory
and disk limits, with the cf CLI's units (256M, 1024M, 1G; 16M to 64G). Without them, scale shows
the process's scale.

More or fewer instances start or stop at once. New limits replace the instances one at a time,
each new one started before the next old one stops. Scale does not wait for them:
kubectl cf app shows them. Bad input is refused before anything is changed.`,
		Example: `  kubectl cf scale web -o acme -s dev -i 3
  kubectl cf scale web -o acme -s dev -m 256M -k 512M
  kubectl cf scale web -o acme -s dev          # shows the scale`,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			change, err = flags.parse(cmd)
			return err
		},
	}, true, func(ctx context.Context, a *appContext) error {
		p, changed, err := applyProcess(ctx, a.c, a.app, processType, change)
		if err != nil {
			return err
		}
		switch {
		case change.Empty():
			fmt.Fprintf(a.out, "Process %s of app %q: %s\n", processType, a.app.Spec.DisplayName, describeScale(p.Spec))
		case !changed:
			fmt.Fprintf(a.out, "Process %s of app %q has %s already.\n", processType, a.app.Spec.DisplayName, describeScale(p.Spec))
		case change.LimitsChange() && a.app.Spec.DesiredState == cfv1alpha1.StartedState:
			fmt.Fprintf(a.out, "Scaled process %s of app %q: %s. Its instances are replaced one at a time with the new limits.\n",
				processType, a.app.Spec.DisplayName, describeScale(p.Spec))
		default:
			fmt.Fprintf(a.out, "Scaled process %s of app %q: %s.\n", processType, a.app.Spec.DisplayName, describeScale(p.Spec))
		}
		return nil
	})
	flags.addScaleFlags(cmd)
	cmd.Flags().StringVar(&processType, "process", cfv1alpha1.WebProcessType, "The type of the app's process to scale.")
	return cmd
}
