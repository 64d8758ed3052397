package cli

import (
	"fmt"
	"strings"

	"code.cloudfoundry.org/cf-hnc/cf"

	"github.com/spf13/cobra"
)

func newDeleteSpaceCommand(s *session) *cobra.Command {
	o := &deleteOptions{}
	cmd := &cobra.Command{
		Use:   "delete-space ORG SPACE [--force]",
		Short: "Delete a space with its namespace and everything in it, after saying what goes",
		Long: "Delete the space SPACE of ORG: cf-hnc deletes its namespace through HNC, and with it its apps, packages, " +
			"builds, kpack Images and Builds, and the build configuration in it (the space's own, and HNC's copies of " +
			"what is placed in its org or the root; those originals stay). It lists what goes and asks first, unless --force.",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: s.completeOrgThenSpace,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, org, err := s.clientAndOrg(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			space, err := cf.FindSpace(cmd.Context(), c, org, args[1])
			if err != nil {
				return err
			}
			t := target{orgName: org.Spec.DisplayName, space: space}
			in, err := contentsOf(cmd.Context(), c, space.Name)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Deleting %s deletes its namespace %s and everything in it:\n", t, space.Name)
			rows := append(in.rows(), []string{"  build configuration", orNone(strings.Join(in.buildConfiguration, ", "))})
			if err := writeTable(out, rows); err != nil {
				return err
			}
			if !o.force && !confirm(cmd.InOrStdin(), out, fmt.Sprintf("Really delete %s and all of the above?", t)) {
				fmt.Fprintln(out, "Nothing was deleted.")
				return nil
			}
			// cf-hnc's finalizer deletes the namespace; the space goes once it is gone.
			if err := cf.Delete(cmd.Context(), c, space, cf.SpaceResource); err != nil {
				return fmt.Errorf("deleting %s: %w", t, rejected(err))
			}
			if !o.wait.wait {
				fmt.Fprintf(out, "%s is being deleted\n", t)
				return nil
			}
			if err := waitGone(cmd.Context(), c, space, o.wait.timeout); err != nil {
				return fmt.Errorf("%s (namespace %s): %w", t, space.Name, err)
			}
			fmt.Fprintf(out, "%s is deleted, with its namespace %s\n", t, space.Name)
			return nil
		},
	}
	o.addFlags(cmd, "the space")
	return cmd
}
