package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"code.cloudfoundry.org/cf-hnc/cf"
)

func newCreateOrgCommand(s *session) *cobra.Command {
	var (
		guid string
		wait waitOptions
	)
	cmd := &cobra.Command{
		Use:   "create-org NAME [--guid GUID]",
		Short: "Create an org and wait until its namespace is ready",
		Long: "Create a CFOrg named GUID in the root namespace with the display name NAME; cf-hnc makes its " +
			"namespace, named GUID, under the root namespace.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := s.client()
			if err != nil {
				return err
			}
			org, err := cf.CreateOrg(cmd.Context(), c, s.root, args[0], guid)
			if err != nil {
				return fmt.Errorf("creating org %q: %w", args[0], rejected(err))
			}
			if !wait.wait {
				fmt.Fprintf(cmd.OutOrStdout(), "org %q created: namespace %s\n", org.Spec.DisplayName, org.Name)
				return nil
			}
			if err := waitReady(cmd.Context(), c, org, wait.timeout); err != nil {
				return fmt.Errorf("org %q (namespace %s): %w", org.Spec.DisplayName, org.Name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "org %q is ready: namespace %s\n", org.Spec.DisplayName, org.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&guid, "guid", "", "The org's GUID, which names its namespace (default: a new UUID).")
	wait.addFlags(cmd, "the org's namespace is ready")
	return cmd
}
