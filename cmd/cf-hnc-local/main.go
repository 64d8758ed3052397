// Command cf-hnc-local is what `make run`, `make deploy` and `make undeploy` run, from the
// project's directory:
//
//	cf-hnc-local                        without KUBECONFIG: start the local control plane (etcd,
//	                                    kube-apiserver, kube-controller-manager, a registry and a
//	                                    node, on which HNC, kpack and cf-hnc run as pods, installed
//	                                    from their manifests and images), forward the CF API to
//	                                    127.0.0.1:9000 if free, print how to use them and stay up
//	                                    until Ctrl-C; with KUBECONFIG: install what the manager needs
//	                                    into that cluster and run the manager here
//	cf-hnc-local deploy --image=REF     build config/default with the manager's image REF and
//	                                    server-side apply it to the cluster of the kubeconfig
//	cf-hnc-local undeploy [--purge]     remove what deploy applied (--purge: and the data)
//
// All three build and apply config/default with internal/install, as the local control plane
// does.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/install"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	project, err := os.Getwd()
	if err != nil {
		exit(err)
	}
	config := filepath.Join(project, "config")
	if len(os.Args) > 1 {
		exit(subcommand(ctx, config, os.Args[1], os.Args[2:]))
	}
	manager := filepath.Join(project, "bin", "cf-hnc")
	if kubeconfig := os.Getenv("KUBECONFIG"); kubeconfig != "" {
		exit(runAgainst(ctx, kubeconfig, config, manager))
	}
	exit(runLocal(ctx))
}

// subcommand runs deploy or undeploy against the cluster of the current kubeconfig.
func subcommand(ctx context.Context, config, name string, args []string) error {
	flags := flag.NewFlagSet(name, flag.ContinueOnError)
	image := flags.String("image", "", "deploy: the manager's image reference (required)")
	apiURL := flags.String("api-url", "", "deploy: the CF API's URL as the cf CLI reaches it, the host its certificate names (required)")
	purge := flags.Bool("purge", false, "undeploy: also delete every CFOrg (with its namespaces, spaces and apps), the CRDs and the root namespace")
	kubeconfig := flags.String("kubeconfig", "", "the kubeconfig; default: $KUBECONFIG, else ~/.kube/config")
	if err := flags.Parse(args); err != nil {
		return err
	}
	c, host, err := clusterClient(*kubeconfig)
	if err != nil {
		return err
	}
	switch name {
	case "deploy":
		if *image == "" || *apiURL == "" {
			return fmt.Errorf("deploy: --image and --api-url are required (make deploy IMG=<reference> API_URL=https://<the CF API's host>)")
		}
		objs, err := install.Build(config, install.Default, *image)
		if err != nil {
			return err
		}
		if err := install.SetAPIURL(objs, *apiURL); err != nil {
			return err
		}
		fmt.Printf("Applying config/default (%d objects, image %s) to %s ...\n", len(objs), *image, host)
		if err := install.Apply(ctx, c, objs); err != nil {
			return fmt.Errorf("%w (is HNC installed in the cluster? docs/install.md)", err)
		}
		fmt.Printf("Applied. Watch the rollout: kubectl -n %s rollout status deployment/%s\n", install.Namespace, install.ManagerDeployment)
		fmt.Printf("The CF API (deployment/%s) starts once its serving certificate is in the Secret %s/%s:\n"+
			"  kubectl -n %s create secret tls %s --cert=<certificate for the API's host name> --key=<its key>\n",
			install.APIDeployment, install.Namespace, install.APISecret, install.Namespace, install.APISecret)
		return nil
	case "undeploy":
		objs, err := install.Build(config, install.Default, "")
		if err != nil {
			return err
		}
		what := "the manager and what it runs with (CRDs, CF objects, orgs' and spaces' namespaces, the root namespace and HNC's configuration stay)"
		if *purge {
			what = "every CFOrg with its namespaces, then everything config/default applied"
		}
		fmt.Printf("Removing %s from %s ...\n", what, host)
		return install.Uninstall(ctx, c, objs, install.UninstallOptions{Purge: *purge})
	}
	return fmt.Errorf("unknown command %q: use deploy or undeploy, or no argument for make run", name)
}

// clusterClient connects to the cluster of a kubeconfig (default: the usual loading rules).
func clusterClient(kubeconfig string) (client.Client, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: cfscheme.New()})
	return c, cfg.Host, err
}

// cfAPIAddress and gatewayAddress are where `make run` forwards the CF API and the gateway's
// HTTP listener, unless something else listens there.
const (
	cfAPIAddress   = "127.0.0.1:9000"
	gatewayAddress = "127.0.0.1:8000"
)

// runLocal starts everything on the local control plane and waits for Ctrl-C.
func runLocal(ctx context.Context) error {
	// Every component logs to its own file; the harness's own controller-runtime clients would
	// otherwise warn that controller-runtime's logger is unset.
	ctrl.SetLogger(logr.Discard())
	fmt.Println("Starting the local control plane: etcd, kube-apiserver, kube-controller-manager, a registry and a node (containerd, kubelet, kube-scheduler), then HNC, kpack and cf-hnc (its manager and CF API, its image built from this tree) as pods of the node ...")
	started := time.Now()
	cp, err := controlplane.Start(ctx, controlplane.Options{
		ControllerManager: true,
		HNC:               true,
		Kpack:             true,
		Node:              true,
		DefaultBuilder:    true,
		CFHNC:             true,
		CFAPIAddress:      freeOrAny(cfAPIAddress),
		Gateway:           true,
		GatewayAddress:    freeOrAny(gatewayAddress),
	})
	if err != nil {
		return err
	}
	defer cp.Stop()
	fmt.Printf("\nReady in %s. The platform's pods (kubectl get pods -A):\n\n", time.Since(started).Round(time.Second))
	if err := printPods(ctx, cp); err != nil {
		return err
	}
	admin, err := kubeconfigUser(cp.Kubeconfig)
	if err != nil {
		return err
	}
	host, password := cp.Kpack().Registry.Host(), cp.Kpack().TenantPassword
	fmt.Printf(`
cf-hnc is ready. Logs: %s

  export KUBECONFIG=%s PATH=$PWD/bin:$PATH REGISTRY=%s PASSWORD=%s
  kubectl hns tree cf                       # the HNC view of orgs and spaces
  kubectl cf create-org acme
  kubectl cf create-space acme dev
  echo "$PASSWORD" | kubectl cf set-registry acme --server $REGISTRY --username %s/acme \
      --password-stdin --droplet-repository $REGISTRY/%s/acme   # once per org
  kubectl cf tree                           # orgs, spaces and whether each can build

The CF API for the real cf CLI (docs/cli.md, "The cf CLI") runs as the pods of deployment
%s/%s, forwarded to %s. Its own reads have the rights of its ServiceAccount; every
request acts as the kubeconfig user that the cf CLI logs in as (with KUBECONFIG set as above).
Its certificate is signed by the CA in %s:

  export SSL_CERT_FILE=%s
  cf api %s
  cf auth %s         # a user of $KUBECONFIG, here the administrator
  cf orgs

The registry at $REGISTRY holds a busybox stack (ClusterStack %q), the CNB lifecycle and
two buildpacks that detect on a Staticfile and on a Procfile (ClusterStore %q); build pods run
them for real on the node. The default Builder %q is placed once in the root namespace %q; cf-hnc
builds every space with a ClusterBuilder made from it. Each org gets a registry account of its
own, "%s/<org>", which may push only below "%s/<org>/" (all share the password above).
A stack fix, as an operator makes one: kill -USR1 %d publishes a fixed run image and points
the ClusterStack at it.
Press Ctrl-C to stop; everything started here stops with it.
`, cp.LogDir(), cp.Kubeconfig, host, password, controlplane.OrgsRepository, controlplane.OrgsRepository,
		install.Namespace, install.APIDeployment, cp.CFAPIURL(), cp.CFAPICA(), cp.CFAPICA(), cp.CFAPIURL(), admin,
		controlplane.Stack, controlplane.Store, controlplane.DefaultBuilder, controlplane.RootNamespace,
		controlplane.OrgsRepository, controlplane.OrgsRepository, os.Getpid())
	stackFix := make(chan os.Signal, 1)
	signal.Notify(stackFix, syscall.SIGUSR1)
	defer signal.Stop(stackFix)
	died := watch(ctx, cp)
	for {
		select {
		case <-ctx.Done():
			fmt.Println("\nStopping ...")
			return nil
		case err := <-died:
			return err
		case <-stackFix:
			// The registry lives in this process: nobody else can publish into it.
			if ref, err := cp.UpgradeRunImage(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "stack fix:", err)
			} else {
				fmt.Printf("Stack fix: published run image %s and pointed ClusterStack %q at it.\n", ref.Pinned(), controlplane.Stack)
			}
		}
	}
}

// printPods prints every pod of the cluster as `kubectl get pods -A` does, in short.
func printPods(ctx context.Context, cp *controlplane.ControlPlane) error {
	pods := &corev1.PodList{}
	if err := cp.Client.List(ctx, pods); err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 3, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tNAME\tREADY\tSTATUS\tRESTARTS\tIP")
	for _, pod := range pods.Items {
		ready, restarts := 0, int32(0)
		status := string(pod.Status.Phase)
		for _, c := range pod.Status.ContainerStatuses {
			if c.Ready {
				ready++
			}
			restarts += c.RestartCount
			if c.State.Waiting != nil && c.State.Waiting.Reason != "" {
				status = c.State.Waiting.Reason
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%d/%d\t%s\t%d\t%s\n", pod.Namespace, pod.Name, ready, len(pod.Spec.Containers), status, restarts, pod.Status.PodIP)
	}
	return w.Flush()
}

// freeOrAny is address if nothing listens there, else "" (any free loopback port).
func freeOrAny(address string) string {
	l, err := net.Listen("tcp", address)
	if err != nil {
		return ""
	}
	l.Close()
	return address
}

// kubeconfigUser is the name of the user of a kubeconfig's current context, which `cf auth`
// takes.
func kubeconfigUser(path string) (string, error) {
	config, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return "", err
	}
	if current, ok := config.Contexts[config.CurrentContext]; ok {
		return current.AuthInfo, nil
	}
	return "", fmt.Errorf("%s has no current context", path)
}

// watch reports the first component that dies.
func watch(ctx context.Context, cp *controlplane.ControlPlane) <-chan error {
	died := make(chan error, 1)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := cp.Healthy(); err != nil {
					died <- err
					return
				}
			}
		}
	}()
	return died
}

// runAgainstFlags are the manager flags that differ from the Deployment's when the manager runs
// on a developer's machine against a cluster.
var runAgainstFlags = []string{
	"kubeconfig",                // the developer's identity, not the in-cluster ServiceAccount
	"health-probe-bind-address", // off: no kubelet probes it
	"metrics-bind-address",      // off
	"enable-webhooks",           // off: a cluster cannot call back into a developer's machine
}

// runAgainst applies config/default to a real cluster (HNC and kpack must be installed there)
// without what only the in-cluster manager needs (its Deployment, Services, webhook
// configuration and certificate), and runs the manager here with the Deployment's args, webhooks
// off. Its leader election keeps it from reconciling alongside a deployed cf-hnc.
func runAgainst(ctx context.Context, kubeconfig, config, manager string) error {
	fmt.Printf("KUBECONFIG=%s: applying config/default without the in-cluster manager, then running the manager here against that cluster.\n", kubeconfig)
	c, _, err := clusterClient(kubeconfig)
	if err != nil {
		return err
	}
	objs, err := install.Build(config, install.Default, "")
	if err != nil {
		return err
	}
	container, err := install.ManagerContainerOf(objs)
	if err != nil {
		return err
	}
	var needed []*unstructured.Unstructured
	for _, obj := range objs {
		if !install.InClusterOnly(obj) {
			needed = append(needed, obj)
		}
	}
	if err := install.Apply(ctx, c, needed); err != nil {
		return fmt.Errorf("%w (is HNC installed in the cluster? docs/install.md)", err)
	}
	args, err := install.OverrideArgs(container.Args, map[string]string{
		"kubeconfig":                kubeconfig,
		"health-probe-bind-address": "0",
		"metrics-bind-address":      "0",
		"enable-webhooks":           "false",
	}, runAgainstFlags)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, manager, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("the cf-hnc manager: %w", err)
	}
	return nil
}

// exit ends the program: with the error, or successfully.
func exit(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
