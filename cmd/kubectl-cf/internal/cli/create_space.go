package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
)

func newCreateSpaceCommand(s *session) *cobra.Command {
	var (
		guid string
		wait waitOptions
	)
	cmd := &cobra.Command{
		Use:   "create-space ORG NAME [--guid GUID]",
		Short: "Create a space in an org, wait until its namespace is ready, and show whether it can build",
		Long: "Create a CFSpace named GUID with the display name NAME in the namespace of ORG (an org's name, " +
			"case-insensitive, or its GUID); cf-hnc makes the space's namespace, named GUID, under the org's.",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: s.completeOrgArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, org, err := s.clientAndOrg(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			space, err := cf.CreateSpace(cmd.Context(), c, org, args[1], guid)
			if err != nil {
				return fmt.Errorf("creating space %q in org %q: %w", args[1], org.Spec.DisplayName, rejected(err))
			}
			out := cmd.OutOrStdout()
			if !wait.wait {
				fmt.Fprintf(out, "space %q created in org %q: namespace %s\n", space.Spec.DisplayName, org.Spec.DisplayName, space.Name)
				return nil
			}
			if err := waitReady(cmd.Context(), c, space, wait.timeout); err != nil {
				return fmt.Errorf("space %q (namespace %s): %w", space.Spec.DisplayName, space.Name, err)
			}
			fmt.Fprintf(out, "space %q in org %q is ready: namespace %s\n", space.Spec.DisplayName, org.Spec.DisplayName, space.Name)
			// cf-hnc reports BuildReady in the same status update that makes the space Ready.
			buildReady := meta.FindStatusCondition(space.Status.Conditions, cfv1alpha1.BuildReadyCondition)
			fmt.Fprintf(out, "build ready: %s\n", describe(buildReady))
			return nil
		},
	}
	cmd.Flags().StringVar(&guid, "guid", "", "The space's GUID, which names its namespace (default: a new UUID).")
	wait.addFlags(cmd, "the space's namespace is ready")
	return cmd
}
