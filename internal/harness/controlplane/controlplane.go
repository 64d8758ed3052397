// Package controlplane runs cf-hnc's local control plane from the binaries and images that
// `make tools` builds: etcd and kube-apiserver (through envtest), kube-controller-manager, and
// with a node (containerd, runc, the kubelet and kube-scheduler) on a pod network of its own,
// an in-memory OCI registry and, as pods of that node installed from their manifests and images
// as an operator installs them, HNC, kpack and cf-hnc (the manager and the CF API). `make run`,
// the e2e suite and the benchmarks start it whole; the integration suites start the apiserver
// with HNC as a host process and run cf-hnc's reconcilers in their own process.
//
// Every server on the host listens on 127.0.0.1; pods listen in network namespaces of the
// node's own, which the host's bridge reaches (podnetwork.go). Each host process writes its own
// log file under <WorkDir>/logs, the platform's pods' logs are saved there at Stop, and Stop
// ends every process it started, also after a failed start.
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
	// objects are garbage collected, every namespace gets its default ServiceAccount, and with
	// a node, Deployments get their pods and Services their endpoints.
	ControllerManager bool
	// HNC runs HNC with its webhooks and config/hnc: as its release's Deployment on the node
	// with Node, else as a host process.
	HNC bool
	// Node runs a real node on its own pod network, with the registry seeded with a stack, the
	// CNB lifecycle, cf-hnc's buildpacks and kpack's images (requires ControllerManager). It
	// runs as root only.
	Node bool
	// Kpack installs kpack's release on the node and makes the cluster-scoped kpack objects
	// Ready (requires Node).
	Kpack bool
	// DefaultBuilder places a default Builder, its ServiceAccount and credentials once in the
	// root namespace (requires Kpack and HNC), so that every space gets a Builder.
	DefaultBuilder bool
	// Webhooks prepares certificates and a port for cf-hnc's webhook server (Webhooks()) in a
	// test's own process; the test registers the configurations with RegisterWebhooks. Not
	// with CFHNC, whose webhooks are deployed with config/default.
	Webhooks bool
	// CFHNC installs cf-hnc on the node as `make deploy` does (config/default: the manager and
	// the CF API), from an image built from ProjectDir's working tree (requires Node, HNC and
	// Kpack).
	CFHNC bool
	// CFAPIAddress is the loopback address where the CF API is forwarded (CFAPIURL). Empty: a
	// free port.
	CFAPIAddress string
	// Gateway installs the Gateway API and the embedded default gateway (config/gateway) on the
	// node, forwarded to GatewayAddress (GatewayURL; empty: a free loopback port), and
	// NetworkPolicies enforced there (requires Node).
	Gateway        bool
	GatewayAddress string
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
	readiness     map[string]func(context.Context) error
	hncMetrics    string
	kpack         *Kpack
	node          *node
	network       *podNetwork
	kubeletClient kubeletClient
	platform      *platform
	// cfhncImage is the build of cf-hnc's image that Start began.
	cfhncImage     *imageBuild
	deployedImage  string
	cfAPIForward   *serviceForward
	cfAPICert      keyPair
	cfAPICA        string
	gatewayForward *serviceForward
}

// Start starts the components in dependency order and waits until each is ready. On error it
// stops whatever it started and says which component failed and where its log is.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	if err := requireForCFHNC(opts); err != nil {
		return nil, err
	}
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
	if opts.CFHNC {
		// Built while the rest starts: compiling the manager is the longest step on a cold cache.
		cp.cfhncImage = cp.buildCFHNCImage(context.WithoutCancel(ctx), filepath.Join(p.workDir, "images", "cf-hnc"), 0)
	}
	steps := []struct {
		enabled bool
		run     func(context.Context) error
	}{
		{opts.Node, cp.prepareNode},
		{true, cp.startAPIServer},
		{opts.Node, cp.forwardToAPIServer},
		{opts.ControllerManager, cp.startControllerManager},
		{opts.Node, cp.startRegistry},
		{opts.Node, cp.startNode},
		{opts.HNC, cp.startHNC},
		{opts.HNC, cp.installRoot},
		{opts.Webhooks && !opts.CFHNC, cp.prepareCFHNCWebhooks},
		{opts.Kpack, cp.startKpack},
		{opts.Gateway, cp.startNetworkPolicies},
		{opts.Gateway, cp.startGateway},
		{opts.DefaultBuilder, cp.placeDefaultBuilder},
		// Forwarded before it is deployed: the API's Deployment names its URL.
		{opts.CFHNC, cp.exposeCFAPI},
		{opts.CFHNC, cp.Deploy},
		{opts.DefaultBuilder && opts.CFHNC, cp.waitForDefaultClusterBuilder},
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

// Stop ends every component in reverse start order and removes temporary state. The platform's
// pods end with the node; their logs are saved first.
func (cp *ControlPlane) Stop() {
	for _, f := range []**serviceForward{&cp.cfAPIForward, &cp.gatewayForward} {
		if *f != nil {
			(*f).close()
			*f = nil
		}
	}
	if cp.cfhncImage != nil {
		cp.cfhncImage.cancel()
		<-cp.cfhncImage.done
	}
	cp.savePlatformLogs(context.Background())
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

// Healthy returns an error naming each component that is no longer running, with its log: a
// host process that ended, or a platform pod that cannot run (crashing, its image not pulled).
func (cp *ControlPlane) Healthy() error {
	var errs []error
	for _, c := range cp.components {
		if err := c.alive(); err != nil {
			errs = append(errs, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs = append(errs, cp.unhealthyPlatform(ctx))
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
