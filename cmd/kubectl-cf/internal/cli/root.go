// Package cli is the kubectl-cf plugin: the commands with which an operator creates Cloud
// Foundry orgs and spaces, places an org's registry credentials once, and sees the tree of orgs
// and spaces with whether each space can build. Every command talks to the cluster through
// controller-runtime's client and writes to the command's output, so that tests run it
// in-process.
package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// fieldOwner is the server-side apply field manager of everything the plugin writes.
const fieldOwner = client.FieldOwner("kubectl-cf")

// NewCommand returns the kubectl-cf command with its subcommands.
func NewCommand() *cobra.Command {
	return newCommand(connect)
}

// session is what every subcommand shares: the cluster it talks to and the root namespace.
type session struct {
	kubeconfig string
	root       string
	connect    func(kubeconfig string) (client.Client, error)
}

// client connects to the cluster that --kubeconfig, $KUBECONFIG or ~/.kube/config names.
func (s *session) client() (client.Client, error) {
	return s.connect(s.kubeconfig)
}

// newCommand builds the command tree around connect, which tests replace to observe the client.
func newCommand(connect func(kubeconfig string) (client.Client, error)) *cobra.Command {
	s := &session{connect: connect}
	root := &cobra.Command{
		Use:   "kubectl-cf",
		Short: "Manage Cloud Foundry orgs, spaces and their build configuration on cf-hnc",
		// kubectl runs the plugin as `kubectl cf`: the help says so.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl cf"},
		// Errors are about the cluster's state far more often than about the usage; the
		// usage is one --help away.
		SilenceUsage: true,
		// Shell completion reaches a kubectl plugin only through a kubectl_complete-cf script,
		// which this plugin does not ship.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.PersistentFlags().StringVar(&s.kubeconfig, "kubeconfig", "", "Path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config).")
	root.PersistentFlags().StringVar(&s.root, "root-namespace", "cf", "The root namespace: orgs live in it.")
	root.AddCommand(newCreateOrgCommand(s), newCreateSpaceCommand(s), newSetRegistryCommand(s), newTreeCommand(s))
	return root
}

// connect returns a client for the kubeconfig at path, or for the one kubectl would use.
func connect(path string) (client.Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	c, err := client.New(config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", config.Host, err)
	}
	return c, nil
}
