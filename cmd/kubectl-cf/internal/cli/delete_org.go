package cli

import (
	"fmt"
	"slices"
	"strings"

	"code.cloudfoundry.org/cf-hnc/cf"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

func newDeleteOrgCommand(s *session) *cobra.Command {
	o := &deleteOptions{}
	cmd := &cobra.Command{
		Use:   "delete-org ORG [--force]",
		Short: "Delete an org with its spaces, their namespaces and everything in them, after saying what goes",
		Long: "Delete the org ORG: cf-hnc has HNC delete the org's namespace with the namespaces of all its spaces, and with " +
			"them their apps, packages, builds, kpack Images and Builds, the build configuration placed in the org and the " +
			"copies of it (and of the root's) in every space. It lists what goes and asks first, unless --force.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: s.completeOrgArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, org, err := s.clientAndOrg(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			rows, err := orgContents(cmd, c, org)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Deleting org %q deletes its namespace %s, and its spaces with their namespaces and everything in them:\n",
				org.Spec.DisplayName, org.Name)
			if err := writeTable(out, rows); err != nil {
				return err
			}
			question := fmt.Sprintf("Really delete org %q and all of the above?", org.Spec.DisplayName)
			if !o.force && !confirm(cmd.InOrStdin(), out, question) {
				fmt.Fprintln(out, "Nothing was deleted.")
				return nil
			}
			// cf-hnc's finalizer has HNC delete the org's namespace with its spaces'; the org
			// goes once they are gone.
			if err := cf.Delete(cmd.Context(), c, org, cf.OrgResource); err != nil {
				return fmt.Errorf("deleting org %q: %w", org.Spec.DisplayName, rejected(err))
			}
			if !o.wait.wait {
				fmt.Fprintf(out, "org %q is being deleted\n", org.Spec.DisplayName)
				return nil
			}
			if err := waitGone(cmd.Context(), c, org, o.wait.timeout); err != nil {
				return fmt.Errorf("org %q (namespace %s): %w", org.Spec.DisplayName, org.Name, err)
			}
			fmt.Fprintf(out, "org %q is deleted, with its namespace %s and its spaces'\n", org.Spec.DisplayName, org.Name)
			return nil
		},
	}
	o.addFlags(cmd, "the org")
	return cmd
}

// orgContents are the rows that say what goes with an org: each space with what it holds, and
// the build configuration placed in the org.
func orgContents(cmd *cobra.Command, c client.Client, org *cfv1alpha1.CFOrg) ([][]string, error) {
	ctx := cmd.Context()
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := c.List(ctx, spaces, client.InNamespace(org.Name)); err != nil {
		return nil, fmt.Errorf("listing the spaces of org %q: %w", org.Spec.DisplayName, err)
	}
	slices.SortFunc(spaces.Items, func(a, b cfv1alpha1.CFSpace) int { return byDisplayName(&a, &b) })
	var rows [][]string
	for _, space := range spaces.Items {
		in, err := contentsOf(ctx, c, space.Name)
		if err != nil {
			return nil, err
		}
		rows = append(rows, []string{fmt.Sprintf("  space %s", space.Spec.DisplayName), "namespace " + space.Name})
		for _, row := range in.rows() {
			rows = append(rows, []string{"  " + row[0], row[1]})
		}
	}
	if len(spaces.Items) == 0 {
		rows = append(rows, []string{"  spaces", "none"})
	}
	placed, err := buildConfigurationIn(ctx, c, org.Name)
	if err != nil {
		return nil, err
	}
	configuration := "none placed in the org"
	if len(placed) > 0 {
		configuration = strings.Join(placed, ", ") + " in the org's namespace, and their copies in its spaces"
	}
	rows = append(rows, []string{"  build configuration", configuration})
	return rows, nil
}
