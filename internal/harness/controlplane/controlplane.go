// Package controlplane runs cf-hnc's local control plane from the binaries that `make tools`
// builds: etcd and kube-apiserver (through envtest), kube-controller-manager (namespace
// deletion, garbage collection, default ServiceAccounts), the HNC manager with its webhooks,
// the kpack controller with an in-memory OCI registry, a real node (containerd, runc, the
// kubelet and kube-scheduler) on which kpack's build pods run, the cf-hnc manager and the CF
// API. `make run`, the integration tests, the e2e suite and the benchmarks all start it from
// here.
//
// Every server listens on 127.0.0.1; pods that do not share the host's network listen in
// network namespaces of the node's own (podnetwork.go). Each process writes its own log file
// under <WorkDir>/logs, and Stop ends every process it started, also after a failed start.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RootNamespace is the root namespace of config/root: orgs live in it.
const RootNamespace = "cf"

// BuilderNamespace is the builder namespace of config/root, outside HNC's tree: the root's
// default Builder pushes with a ServiceAccount in it.
const BuilderNamespace = "cf-builders"

// Options say which components to run. The apiserver and etcd always run.
type Options struct {
	// ProjectDir is the repository root, with bin/ and config/. Empty: found from the working
	// directory upwards.
	ProjectDir string
	// WorkDir receives the kubeconfig, the logs and the certificates; relative to ProjectDir.
	// Keep it stable across runs: a run that was killed outright leaves its etcd and
	// kube-apiserver behind, and the next run in the same WorkDir ends them. Empty: .local.
	WorkDir string

	// ControllerManager runs kube-controller-manager: namespaces finish deleting, owned
	// objects are garbage collected, every namespace gets its default ServiceAccount.
	ControllerManager bool
	// HNC runs the HNC manager with its webhooks and installs config/hnc.
	HNC bool
	// Kpack runs the kpack controller against an in-memory registry seeded with a stack, the
	// CNB lifecycle, cf-hnc's buildpacks and kpack's own images, and makes the cluster-scoped
	// kpack objects Ready.
	Kpack bool
	// Node runs a real node, on which kpack's build pods run (requires Kpack, which seeds the
	// images it pulls, and ControllerManager). It runs as root only.
	Node bool
	// DefaultBuilder places a default Builder, its ServiceAccount and credentials once in the
	// root namespace (requires Kpack and HNC), so that every space gets a Builder.
	DefaultBuilder bool
	// Webhooks prepares certificates and a port for cf-hnc's webhook server (Webhooks()) in a
	// test's own process; the test registers the configurations with RegisterWebhooks. Not
	// with Manager, whose webhooks are deployed with config/default.
	Webhooks bool
	// Manager runs the cf-hnc manager binary at this path as config/default deploys it: the
	// whole of config/default is applied, and the binary runs with the Deployment's args and
	// as its ServiceAccount (install.go). Empty: none, for tests that run reconcilers in their
	// own process.
	Manager string
	// CFAPI runs the cf-api binary at this path as config/cf-api deploys it (cfapi.go), on
	// CFAPIAddress or, if that is empty, a free loopback port. It requires Manager, with which
	// config/default is applied.
	CFAPI, CFAPIAddress string
}

// ControlPlane is a running local control plane.
type ControlPlane struct {
	opts  Options
	env   *envtest.Environment
	paths paths

	// Config is an administrator's connection to the apiserver.
	Config *rest.Config
	// Client is a client for Config that knows every scheme the project uses.
	Client client.Client
	// Kubeconfig is the path of the administrator's kubeconfig file.
	Kubeconfig string

	webhooks *envtest.WebhookInstallOptions
	// hncWebhooks holds the serving certificates of HNC's webhooks, in a temporary directory.
	hncWebhooks *envtest.WebhookInstallOptions
	components  []*component
	// readiness checks a restarted component (StartComponent) by name.
	readiness        map[string]func(context.Context) error
	deployed         *deployment
	manager          *component
	managerArgs      []string
	managerMetrics   string
	hncMetrics       string
	stopSecretVolume func()
	kpack            *Kpack
	node             *node
	kubeletClient    kubeletClient
	cfAPIURL         string
}

// Start starts the components in dependency order and waits until each is ready. On error it
// stops whatever it started and says which component failed and where its log is.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	p, err := findPaths(opts)
	if err != nil {
		return nil, err
	}
	if err := p.prepare(); err != nil {
		return nil, err
	}
	cp = &ControlPlane{opts: opts, paths: p}
	defer func() {
		if err != nil {
			cp.Stop()
			cp = nil
		}
	}()
	steps := []struct {
		enabled bool
		run     func(context.Context) error
	}{
		{true, cp.startAPIServer},
		{opts.ControllerManager, cp.startControllerManager},
		{opts.HNC, cp.startHNC},
		{opts.HNC, cp.installRoot},
		{opts.Webhooks && opts.Manager == "", cp.prepareCFHNCWebhooks},
		{opts.Kpack, cp.startKpack},
		{opts.Node, cp.startNode},
		{opts.DefaultBuilder, cp.placeDefaultBuilder},
		{opts.Manager != "", cp.Deploy},
		{opts.Manager != "", cp.StartManager},
		{opts.DefaultBuilder && opts.Manager != "", cp.waitForDefaultClusterBuilder},
		{opts.CFAPI != "" && opts.Manager != "", func(ctx context.Context) error { return cp.StartCFAPI(ctx, opts.CFAPI, opts.CFAPIAddress) }},
	}
	for _, step := range steps {
		if step.enabled {
			if err := step.run(ctx); err != nil {
				return cp, err
			}
		}
	}
	return cp, nil
}

// installRoot creates the root and builder namespaces (config/root), once HNC is there to
// manage the root.
func (cp *ControlPlane) installRoot(ctx context.Context) error {
	return cp.applyKustomization(ctx, "root")
}

// Stop ends every component in reverse start order and removes temporary state.
func (cp *ControlPlane) Stop() {
	cp.StopManager()
	cp.stopNode()
	if cp.kpack != nil {
		cp.kpack.close()
	}
	for i := len(cp.components) - 1; i >= 0; i-- {
		cp.components[i].stop(10 * time.Second)
	}
	cp.components = nil
	for _, webhooks := range []*envtest.WebhookInstallOptions{cp.webhooks, cp.hncWebhooks} {
		if webhooks != nil {
			_ = webhooks.Cleanup()
		}
	}
	if cp.env != nil {
		if err := cp.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "controlplane: stopping the apiserver: %v\n", err)
		}
		cp.env = nil
	}
	_ = os.Remove(cp.paths.pidFile())
}

// Healthy returns an error naming the first component that is no longer running, with its log.
func (cp *ControlPlane) Healthy() error {
	all := cp.components
	if cp.manager != nil {
		all = append(all, cp.manager)
	}
	var errs []error
	for _, c := range all {
		if err := c.alive(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// LogDir is where every component writes its log.
func (cp *ControlPlane) LogDir() string { return cp.paths.logDir() }

// Webhooks is where a test's own cf-hnc webhook server must listen and find its certificates
// (Options.Webhooks).
func (cp *ControlPlane) Webhooks() (host string, port int, certDir string) {
	return cp.webhooks.LocalServingHost, cp.webhooks.LocalServingPort, cp.webhooks.LocalServingCertDir
}

// Kpack is the kpack setup, nil unless Options.Kpack.
func (cp *ControlPlane) Kpack() *Kpack { return cp.kpack }

func (cp *ControlPlane) track(c *component) {
	cp.components = append(cp.components, c)
	cp.paths.recordPID(c.name, c.pid())
}

// adminKubeconfig writes a kubeconfig for a user in the given groups and returns its path.
func (cp *ControlPlane) userKubeconfig(name string, groups ...string) (string, error) {
	user, err := cp.env.AddUser(envtest.User{Name: name, Groups: groups}, cp.Config)
	if err != nil {
		return "", fmt.Errorf("adding user %s: %w", name, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cp.paths.workDir, "kubeconfig-"+name)
	return path, os.WriteFile(path, data, 0o600)
}
