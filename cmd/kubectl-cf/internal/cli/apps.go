package cli

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"code.cloudfoundry.org/cf-hnc/cf"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

func newAppsCommand(s *session) *cobra.Command {
	var target targetFlags
	output := newListOutput()
	cmd := &cobra.Command{
		Use:   "apps --org ORG -s SPACE [-o json|yaml|...]",
		Short: "List the apps of a space: state, instances, droplet, whether it is current, and a held droplet",
		Long: "List the apps of a space sorted by name, with their instances as the cf CLI shows them (web:1/2: per process, " +
			"web first, how many instances run of how many the process should have), the droplet each runs (the CFBuild that staged it), " +
			"the reason of its DropletCurrent condition (UpToDate; Rebuilding while kpack rebuilds it; RebuildFailed; " +
			"UpgradeHeld when the org's policy holds a rebuilt droplet for a restage) and the held droplet. " +
			"-o prints the CFApps instead (json, yaml, name, jsonpath, go-template).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := output.check(); err != nil {
				return err
			}
			c, err := s.client()
			if err != nil {
				return err
			}
			t, err := target.resolve(cmd.Context(), s, c)
			if err != nil {
				return err
			}
			apps := &cfv1alpha1.CFAppList{}
			if err := c.List(cmd.Context(), apps, client.InNamespace(t.space.Name)); err != nil {
				return fmt.Errorf("listing the apps of %s: %w", t, err)
			}
			slices.SortFunc(apps.Items, byAppName)
			processes := &cfv1alpha1.CFProcessList{}
			if err := c.List(cmd.Context(), processes, client.InNamespace(t.space.Name)); err != nil {
				return fmt.Errorf("listing the processes of %s: %w", t, err)
			}
			return output.print(cmd.OutOrStdout(), apps, func() [][]string { return appRows(apps.Items, processes.Items) })
		},
	}
	target.addFlags(cmd, s, false)
	output.addFlags(cmd)
	return cmd
}

// byAppName orders apps by name ignoring case, then by GUID.
func byAppName(a, b cfv1alpha1.CFApp) int {
	return cmp.Or(cmp.Compare(strings.ToLower(a.Spec.DisplayName), strings.ToLower(b.Spec.DisplayName)), cmp.Compare(a.Name, b.Name))
}

// appRows lays out apps as a table, with their instances from processes (of any apps).
func appRows(apps []cfv1alpha1.CFApp, processes []cfv1alpha1.CFProcess) [][]string {
	rows := [][]string{{"NAME", "GUID", "STATE", "INSTANCES", "DROPLET", "DROPLET STATUS", "HELD DROPLET"}}
	for _, app := range apps {
		status := "Unknown"
		if c := meta.FindStatusCondition(app.Status.Conditions, cfv1alpha1.DropletCurrentCondition); c != nil {
			status = c.Reason
		}
		held := ""
		if app.Status.HeldDropletRef != nil {
			held = app.Status.HeldDropletRef.Name
		}
		rows = append(rows, []string{app.Spec.DisplayName, app.Name, string(app.Spec.DesiredState),
			instancesCell(cf.OfApp(processes, app.Name)), orNone(app.Spec.CurrentDropletRef.Name), status, held})
	}
	return rows
}

// instancesCell is the instances of an app's processes as the cf CLI lists them: for each
// process, web first, how many instances run of how many it should have: "web:1/2,worker:0/1".
func instancesCell(processes []cfv1alpha1.CFProcess) string {
	cells := make([]string, len(processes))
	for i, p := range processes {
		cells[i] = fmt.Sprintf("%s:%d/%d", p.Spec.ProcessType, p.Status.RunningInstances, p.Spec.Instances)
	}
	return orNone(strings.Join(cells, ","))
}

// orNone is a value in a table cell, or "-" for none.
func orNone(value string) string {
	return cmp.Or(value, "-")
}
