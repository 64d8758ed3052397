package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/cf"
)

// pollInterval is how often a waiting command looks at the cluster again.
const pollInterval = 250 * time.Millisecond

// waitOptions are the --wait and --timeout flags of the commands that change the cluster.
type waitOptions struct {
	wait    bool
	timeout time.Duration
}

func (o *waitOptions) addFlags(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&o.wait, "wait", true, "Wait until "+what+".")
	cmd.Flags().DurationVar(&o.timeout, "timeout", time.Minute, "How long to wait.")
}

// waitReady waits until obj, an org or a space, is Ready (cf.AwaitReady). It fails at once when
// Ready is False for a reason that needs an operator, and after the timeout, with the last Ready
// condition.
func waitReady(ctx context.Context, c client.Client, obj cf.Conditioned, timeout time.Duration) error {
	err := cf.AwaitReady(ctx, c, obj, cf.Wait{Interval: pollInterval, Timeout: timeout})
	var needsOperator *cf.NeedsOperatorError
	var notReady *cf.NotReadyError
	switch {
	case errors.As(err, &needsOperator):
		return fmt.Errorf("needs an operator: %s", describe(needsOperator.Ready))
	case errors.As(err, &notReady):
		return fmt.Errorf("not ready after %s: %s", timeout, describe(notReady.Ready))
	case err != nil && ctx.Err() == nil:
		return fmt.Errorf("reading its status: %w", err)
	}
	return err
}

// errUnfinished is the error of a poll that ended before what it followed had finished.
var errUnfinished = errors.New("it has not finished")

// pollProgress polls observe until the progress it returns is finished or ctx ends, showing
// each on d; it returns nil, the apiserver's refusal of a read, or errUnfinished (wrapping why
// it stopped). A read that failed short of the apiserver (the connection, or the client's rate
// limiter refusing a wait that would outlast ctx) is retried at the next poll: it says nothing
// about what is followed.
func pollProgress(ctx context.Context, d display, observe func(context.Context) (progress, error)) error {
	start := time.Now()
	defer d.finish()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		p, err := observe(ctx)
		var refused apierrors.APIStatus
		switch {
		case errors.As(err, &refused) && ctx.Err() == nil:
			return err
		case err == nil:
			d.show(time.Since(start), p)
			if p.finished {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", errUnfinished, context.Cause(ctx))
		case <-tick.C:
		}
	}
}
