package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

func newTreeCommand(s *session) *cobra.Command {
	return &cobra.Command{
		Use:   "tree",
		Short: "Show the orgs and their spaces, whether each is ready and whether each space can build",
		Long: "Show the orgs and their spaces sorted by name, with their GUIDs (the names of their namespaces), " +
			"their Ready condition and each space's BuildReady condition, with the reason when False. " +
			"It reads every org and every space in two requests, however many there are. " +
			"`kubectl hns tree ROOT` shows the same namespaces as HNC sees them.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := s.client()
			if err != nil {
				return err
			}
			orgs := &cfv1alpha1.CFOrgList{}
			if err := c.List(cmd.Context(), orgs, client.InNamespace(s.root)); err != nil {
				return fmt.Errorf("listing orgs: %w", err)
			}
			spaces := &cfv1alpha1.CFSpaceList{}
			if err := c.List(cmd.Context(), spaces); err != nil {
				return fmt.Errorf("listing spaces: %w", err)
			}
			return writeTable(cmd.OutOrStdout(), treeRows(orgs.Items, spaces.Items))
		},
	}
}

// treeRows lays out orgs sorted by display name, each followed by its spaces sorted by display
// name and drawn as its branches. Spaces outside an org namespace are not part of the tree.
func treeRows(orgs []cfv1alpha1.CFOrg, spaces []cfv1alpha1.CFSpace) [][]string {
	spacesOf := map[string][]*cfv1alpha1.CFSpace{}
	for i := range spaces {
		spacesOf[spaces[i].Namespace] = append(spacesOf[spaces[i].Namespace], &spaces[i])
	}
	sorted := make([]*cfv1alpha1.CFOrg, len(orgs))
	for i := range orgs {
		sorted[i] = &orgs[i]
	}
	slices.SortFunc(sorted, byDisplayName)
	rows := [][]string{{"ORG / SPACE", "NAMESPACE", "READY", "BUILD READY"}}
	for _, org := range sorted {
		ready := meta.FindStatusCondition(org.Status.Conditions, cfv1alpha1.ReadyCondition)
		rows = append(rows, []string{label(org), org.Name, status(ready), ""})
		children := spacesOf[org.Name]
		slices.SortFunc(children, byDisplayName)
		for i, space := range children {
			branch := "├── "
			if i == len(children)-1 {
				branch = "└── "
			}
			conditions := space.Status.Conditions
			rows = append(rows, []string{branch + label(space), space.Name,
				status(meta.FindStatusCondition(conditions, cfv1alpha1.ReadyCondition)),
				status(meta.FindStatusCondition(conditions, cfv1alpha1.BuildReadyCondition))})
		}
	}
	return rows
}
