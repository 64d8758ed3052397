package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewCommandWrappingClient returns the kubectl-cf command with its client passed through wrap,
// so that a spec can observe the calls a command makes.
func NewCommandWrappingClient(wrap func(client.Client) client.Client) *cobra.Command {
	return newCommand(func(config *rest.Config) (client.Client, error) {
		c, err := connect(config)
		if err != nil {
			return nil, err
		}
		return wrap(c), nil
	})
}
