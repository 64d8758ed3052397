package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// fieldOwner is the server-side apply field manager of everything the plugin writes.
const fieldOwner = client.FieldOwner("kubectl-cf")

// NewCommand returns the kubectl-cf command with its subcommands.
func NewCommand() *cobra.Command {
	return newCommand(connect)
}

// session is what every subcommand shares: the kubeconfig flags every kubectl plugin has
// (--kubeconfig, --context, --namespace, --as, --as-group, ...), and the root namespace.
type session struct {
	flags   *genericclioptions.ConfigFlags
	root    string
	connect func(*rest.Config) (client.Client, error)
}

// restConfig is the connection that the kubeconfig flags select.
func (s *session) restConfig() (*rest.Config, error) {
	config, err := s.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	// client-go's defaults (5 requests a second) would throttle a build's progress, which is
	// read several times a second; kubectl itself allows as much.
	config.QPS, config.Burst = 50, 300
	return config, nil
}

// client connects to the cluster that the kubeconfig flags select.
func (s *session) client() (client.Client, error) {
	config, err := s.restConfig()
	if err != nil {
		return nil, err
	}
	return s.connect(config)
}

// clientset is a client-go clientset for what controller-runtime's client does not do: pod logs.
func (s *session) clientset() (kubernetes.Interface, error) {
	config, err := s.restConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(config)
}

// namespace is the namespace of --namespace, else of the kubeconfig's context; explicit says
// whether --namespace or the context set it (rather than kubectl's fallback "default").
func (s *session) namespace() (namespace string, explicit bool, err error) {
	namespace, explicit, err = s.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", false, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	if !explicit {
		// Namespace() calls a context's own namespace "not overridden"; only kubectl's
		// fallback is not explicit for us.
		raw, rawErr := s.flags.ToRawKubeConfigLoader().RawConfig()
		if rawErr == nil {
			contextName := raw.CurrentContext
			if s.flags.Context != nil && *s.flags.Context != "" {
				contextName = *s.flags.Context
			}
			if c, ok := raw.Contexts[contextName]; ok && c.Namespace != "" {
				explicit = true
			}
		}
	}
	return namespace, explicit, nil
}

// newCommand builds the command tree around connect, which tests replace to observe the client.
func newCommand(connect func(*rest.Config) (client.Client, error)) *cobra.Command {
	s := &session{flags: configFlags(), connect: connect}
	root := &cobra.Command{
		Use:   "kubectl-cf",
		Short: "Run Cloud Foundry orgs, spaces and apps on cf-hnc",
		Long: "Operators create orgs and spaces and place an org's registry once; developers push apps, " +
			"see their builds and restage them, start, stop, restart and scale them, and read their logs. " +
			"Every command takes kubectl's connection flags " +
			"(--kubeconfig, --context, --as, --as-group, ...).",
		// kubectl runs the plugin as `kubectl cf`: the help says so.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl cf"},
		// Errors are about the cluster's state far more often than about the usage; the
		// usage is one --help away.
		SilenceUsage: true,
		// kubectl completes a plugin's arguments through the kubectl_complete-cf script
		// (cmd/kubectl-cf), which runs cobra's hidden __complete command; a `completion`
		// command of the plugin's own would be of no use under kubectl.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	s.flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().Lookup("namespace").Usage =
		"The space that app commands work in, by its namespace (the space's GUID), when --org and --space are not given; default: the kubeconfig context's namespace."
	root.PersistentFlags().StringVar(&s.root, "root-namespace", "cf", "The root namespace: orgs live in it.")
	root.AddGroup(
		&cobra.Group{ID: "apps", Title: "Apps (developers):"},
		&cobra.Group{ID: "orgs", Title: "Orgs and spaces (operators):"},
	)
	for _, cmd := range []*cobra.Command{newPushCommand(s), newAppsCommand(s), newAppCommand(s), newBuildsCommand(s), newRestageCommand(s),
		newStartCommand(s), newStopCommand(s), newRestartCommand(s), newScaleCommand(s), newLogsCommand(s)} {
		cmd.GroupID = "apps"
		root.AddCommand(cmd)
	}
	for _, cmd := range []*cobra.Command{newCreateOrgCommand(s), newCreateSpaceCommand(s), newSetRegistryCommand(s),
		newSetUpgradePolicyCommand(s), newRestageOrgCommand(s), newTreeCommand(s), newDeleteSpaceCommand(s), newDeleteOrgCommand(s)} {
		cmd.GroupID = "orgs"
		root.AddCommand(cmd)
	}
	return root
}

// configFlags are kubectl's connection flags, without those that would take names the plugin's
// commands use: --server (-s) and basic-auth's --username and --password, which are
// set-registry's flags for the registry, and -s which names a space.
func configFlags() *genericclioptions.ConfigFlags {
	flags := genericclioptions.NewConfigFlags(false)
	flags.APIServer = nil
	flags.Username = nil
	flags.Password = nil
	return flags
}

// connect returns a client for a connection.
func connect(config *rest.Config) (client.Client, error) {
	c, err := client.New(config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", config.Host, err)
	}
	return c, nil
}
