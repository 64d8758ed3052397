package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

func newAppCommand(s *session) *cobra.Command {
	output := newListOutput()
	cmd := appCommand(s, &cobra.Command{
		Use:   "app APP --org ORG -s SPACE [-o json|yaml|...]",
		Short: "Show an app: its state and droplet, its processes and how their instances run",
		Long: `Show an app as cf app does: its state, its current droplet (the CFBuild that staged it) and stack,
and the reason of its DropletCurrent condition; then each of its processes (web first): how many
instances run of how many it should have, each instance's memory and disk limits, its health
check and the reason and message of its Running condition (InstancesRunning, AppStopped,
NoDroplet, Starting, CrashLoop, OutOfMemory, ImagePullFailed, Unschedulable); and each instance:
its state (STARTING, RUNNING, CRASHED, DOWN), why it is not running, how often it was restarted
after crashing, and the droplet image it runs. -o prints the CFApp and its CFProcesses instead
(json, yaml, name, jsonpath, go-template), as a List.`,
		Example: `  kubectl cf app web --org acme -s dev
  kubectl cf app web -n <space guid> -o yaml`,
		PreRunE: func(*cobra.Command, []string) error { return output.check() },
	}, false, func(ctx context.Context, a *appContext) error {
		processes, err := appProcesses(ctx, a.c, a.app)
		if err != nil {
			return err
		}
		list := &corev1.List{Items: []runtime.RawExtension{{Object: a.app}}}
		for i := range processes {
			list.Items = append(list.Items, runtime.RawExtension{Object: &processes[i]})
		}
		return output.printOr(a.out, list, func(out io.Writer) error { return writeApp(out, a.app, processes) })
	})
	output.addFlags(cmd)
	return cmd
}

// writeApp shows an app, its processes (sorted, web first) and their instances.
func writeApp(out io.Writer, app *cfv1alpha1.CFApp, processes []cfv1alpha1.CFProcess) error {
	stack := "-"
	if app.Status.Droplet != nil {
		stack = app.Status.Droplet.Stack
	}
	rows := [][]string{
		{"name:", app.Spec.DisplayName},
		{"guid:", app.Name},
		{"state:", string(app.Spec.DesiredState)},
		{"droplet:", orNone(app.Spec.CurrentDropletRef.Name)},
		{"stack:", stack},
		{"droplet status:", dropletStatus(meta.FindStatusCondition(app.Status.Conditions, cfv1alpha1.DropletCurrentCondition))},
	}
	if app.Status.HeldDropletRef != nil {
		rows = append(rows, []string{"held droplet:", app.Status.HeldDropletRef.Name})
	}
	if err := writeTable(out, rows); err != nil {
		return err
	}
	if len(processes) == 0 {
		_, err := fmt.Fprintln(out, "\nNo process yet: cf-hnc makes the web process of every app.")
		return err
	}
	for i := range processes {
		fmt.Fprintln(out)
		if err := writeProcess(out, &processes[i]); err != nil {
			return err
		}
	}
	return nil
}

// writeProcess shows a process and its instances.
func writeProcess(out io.Writer, p *cfv1alpha1.CFProcess) error {
	running := "cf-hnc has not reported on it yet"
	if c := meta.FindStatusCondition(p.Status.Conditions, cfv1alpha1.RunningCondition); c != nil {
		running = describe(c)
	}
	rows := [][]string{
		{"type:", p.Spec.ProcessType},
		{"instances:", fmt.Sprintf("%d/%d", p.Status.RunningInstances, p.Spec.Instances)},
		{"memory:", formatMB(p.Spec.MemoryMB)},
		{"disk:", formatMB(p.Spec.DiskMB)},
		{"health check:", describeHealthCheck(p.Spec.HealthCheck)},
	}
	if p.Spec.Command != "" {
		rows = append(rows, []string{"command:", p.Spec.Command})
	}
	rows = append(rows, []string{"running:", running})
	if err := writeTable(out, rows); err != nil {
		return err
	}
	if len(p.Status.Instances) == 0 {
		return nil
	}
	instances := [][]string{{"INSTANCE", "STATE", "REASON", "RESTARTS", "IMAGE"}}
	for _, i := range p.Status.Instances {
		instances = append(instances, []string{fmt.Sprintf("#%d", i.Index), string(i.State), orNone(i.Reason),
			strconv.Itoa(int(i.Restarts)), orNone(shortDigest(i.Image))})
	}
	fmt.Fprintln(out)
	return writeTable(out, instances)
}

// dropletStatus is an app's DropletCurrent condition: its reason, with the message when the
// droplet is not current.
func dropletStatus(c *metav1.Condition) string {
	switch {
	case c == nil:
		return "cf-hnc has not reported on it yet"
	case c.Status == metav1.ConditionTrue || c.Message == "":
		return c.Reason
	}
	return c.Reason + ": " + c.Message
}
