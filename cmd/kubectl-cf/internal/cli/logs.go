package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
)

// logTimeFormat is the time of a line as the cf CLI shows it.
const logTimeFormat = "2006-01-02T15:04:05.00-0700"

func newLogsCommand(s *session) *cobra.Command {
	var recent bool
	cmd := appCommand(s, &cobra.Command{
		Use:   "logs APP -o ORG -s SPACE [--recent]",
		Short: "Follow what an app's instances write, or print what they wrote lately (--recent)",
		Long: `Show what the instances of an app write to stdout and stderr, as cf logs does: each line with its
time and its instance, as [APP/PROC/WEB/0] (the process type and the instance's index).

Without --recent, logs follows the app's instances, also those that start later (a scale, a
restart, a new droplet), until interrupted (Ctrl-C). With --recent, it prints the last lines of
each instance, and of the run before for an instance that crashed, oldest first, and ends.
Instances that have not started (no node placed them, or their droplet is being pulled) have
written nothing.`,
		Example: `  kubectl cf logs web -o acme -s dev --recent
  kubectl cf logs web -o acme -s dev`,
	}, true, func(ctx context.Context, a *appContext) error {
		clientset, err := a.s.clientset()
		if err != nil {
			return err
		}
		if recent {
			return recentLogs(ctx, a, clientset)
		}
		return followLogs(ctx, a, clientset)
	})
	cmd.Flags().BoolVar(&recent, "recent", false, "Print the last lines of each instance and end, rather than follow them.")
	return cmd
}

// formatLine shows a line as the cf CLI does, its time in loc.
func formatLine(l cf.LogLine, loc *time.Location) string {
	return fmt.Sprintf("%s %s %s", l.Time.In(loc).Format(logTimeFormat), l.Source, l.Text)
}

// recentLogs prints the last lines of each of the app's instances, of all of them by time, or
// says that they wrote nothing.
func recentLogs(ctx context.Context, a *appContext, clientset kubernetes.Interface) error {
	lines, instances, err := cf.RecentLogs(ctx, a.c, clientset, a.app)
	if err != nil {
		return err
	}
	if instances == 0 {
		why := "none has been started"
		if a.app.Spec.DesiredState == cfv1alpha1.StoppedState {
			why = "it is STOPPED"
		}
		fmt.Fprintf(a.out, "App %q has no instances: %s.\n", a.app.Spec.DisplayName, why)
		return nil
	}
	if len(lines) == 0 {
		fmt.Fprintln(a.out, nothingWritten(instances, a.app.Spec.DisplayName))
		return nil
	}
	for _, l := range lines {
		fmt.Fprintln(a.out, formatLine(l, time.Local))
	}
	return nil
}

// nothingWritten says that an app's instances wrote nothing.
func nothingWritten(instances int, app string) string {
	if instances == 1 {
		return fmt.Sprintf("The 1 instance of app %q has written nothing yet.", app)
	}
	return fmt.Sprintf("The %d instances of app %q have written nothing yet.", instances, app)
}

// followLogs prints what the app's instances write from now on, also those that start later,
// until ctx ends.
func followLogs(ctx context.Context, a *appContext, clientset kubernetes.Interface) error {
	fmt.Fprintf(a.out, "Following what the instances of app %q write (Ctrl-C ends it):\n", a.app.Spec.DisplayName)
	return cf.FollowLogs(ctx, a.c, clientset, a.app, time.Now(), func(l cf.LogLine) { fmt.Fprintln(a.out, formatLine(l, time.Local)) })
}
