package cli

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// appContext is what a command on one app works with: the app, found in the space that the
// target flags name.
type appContext struct {
	s      *session
	c      client.Client
	flags  *targetFlags
	target target
	app    *cfv1alpha1.CFApp
	out    io.Writer
}

// appCommand completes cmd (its Use, help and own flags) into a command on one app, APP: it
// takes the target flags (--org with the shorthand -o unless the command has -o for its
// output), completes APP, finds the space and the app, and runs act. cmd's PreRunE, if any,
// checks the command's own flags before the cluster is asked anything.
func appCommand(s *session, cmd *cobra.Command, withOrgShorthand bool, act func(context.Context, *appContext) error) *cobra.Command {
	flags := &targetFlags{}
	cmd.Args = cobra.ExactArgs(1)
	cmd.ValidArgsFunction = s.completeApps(flags)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := flags.check(); err != nil {
			return err
		}
		c, err := s.client()
		if err != nil {
			return err
		}
		t, err := flags.resolve(cmd.Context(), s, c)
		if err != nil {
			return err
		}
		app, err := findApp(cmd.Context(), c, t, args[0])
		if err != nil {
			return err
		}
		return act(cmd.Context(), &appContext{s: s, c: c, flags: flags, target: t, app: app, out: cmd.OutOrStdout()})
	}
	flags.addFlags(cmd, s, withOrgShorthand)
	return cmd
}

// logsHint is the command that shows what an app's instances wrote lately, targeted as the
// command that gives the hint was.
func (a *appContext) logsHint() string {
	return logsHint(a.app, a.flags, a.target)
}

// logsHint is `kubectl cf logs APP --recent` with the target flags that reach the app's space.
func logsHint(app *cfv1alpha1.CFApp, flags *targetFlags, t target) string {
	where := "-n " + t.space.Name
	if flags.org != "" {
		where = fmt.Sprintf("-o %s -s %s", shellWord(flags.org), shellWord(flags.space))
	}
	return fmt.Sprintf("kubectl cf logs %s --recent %s", shellWord(app.Spec.DisplayName), where)
}

// plainWord is what a shell takes as one word without quotes.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9._/:@%+=,-]+$`)

// shellWord quotes s for a shell when it must be: Cloud Foundry names may hold spaces.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
