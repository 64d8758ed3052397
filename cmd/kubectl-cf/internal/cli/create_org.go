package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
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
			org := &cfv1alpha1.CFOrg{
				ObjectMeta: metav1.ObjectMeta{Namespace: s.root, Name: guid},
				Spec:       cfv1alpha1.CFOrgSpec{DisplayName: args[0]},
			}
			if org.Name == "" {
				org.Name = string(uuid.NewUUID())
			}
			if err := c.Create(cmd.Context(), org); err != nil {
				return fmt.Errorf("creating org %q: %w", org.Spec.DisplayName, rejected(err))
			}
			if !wait.wait {
				fmt.Fprintf(cmd.OutOrStdout(), "org %q created: namespace %s\n", org.Spec.DisplayName, org.Name)
				return nil
			}
			conditions := func() []metav1.Condition { return org.Status.Conditions }
			if err := waitReady(cmd.Context(), c, org, conditions, wait.timeout); err != nil {
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
