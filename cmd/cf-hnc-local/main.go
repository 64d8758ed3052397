// Command cf-hnc-local is what `make run` runs. Without KUBECONFIG it starts the local control
// plane (etcd, kube-apiserver, kube-controller-manager, HNC, kpack with an in-memory registry)
// and the cf-hnc manager, prints how to use it and stays up until Ctrl-C. With KUBECONFIG it
// installs cf-hnc's CRDs and configuration into that cluster and runs the manager against it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	project, err := os.Getwd()
	if err != nil {
		exit(err)
	}
	manager := filepath.Join(project, "bin", "cf-hnc")
	if kubeconfig := os.Getenv("KUBECONFIG"); kubeconfig != "" {
		exit(runAgainst(ctx, kubeconfig, manager))
	}
	exit(runLocal(ctx, manager))
}

// runLocal starts everything on the local control plane and waits for Ctrl-C.
func runLocal(ctx context.Context, manager string) error {
	// Every component logs to its own file; the in-process ones (the stand-in kubelet's
	// informers) would otherwise warn at shutdown that controller-runtime's logger is unset.
	ctrl.SetLogger(logr.Discard())
	fmt.Println("Starting the local control plane: etcd, kube-apiserver, kube-controller-manager, HNC, kpack, a registry and cf-hnc ...")
	cp, err := controlplane.Start(ctx, controlplane.Options{
		ControllerManager: true,
		HNC:               true,
		Kpack:             true,
		StandInKubelet:    true,
		DefaultBuilder:    true,
		Manager:           manager,
	})
	if err != nil {
		return err
	}
	defer cp.Stop()
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

The registry at $REGISTRY holds a stack (ClusterStack %q), a lifecycle and buildpacks
(ClusterStore %q). The default Builder %q is placed once in the root namespace %q; cf-hnc
builds every space with a ClusterBuilder made from it. Each org gets a registry account of its
own, "%s/<org>", which may push only below "%s/<org>/" (all share the password above).
A stack fix, as an operator makes one: kill -USR1 %d publishes a fixed run image and points
the ClusterStack at it.
Press Ctrl-C to stop; everything started here stops with it.
`, cp.LogDir(), cp.Kubeconfig, host, password, controlplane.OrgsRepository, controlplane.OrgsRepository,
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

// runAgainst installs cf-hnc's CRDs, the HNC configuration and the root namespace into a real
// cluster (HNC and kpack must be installed there) and runs the manager with webhooks off: a
// cluster cannot call back into a developer's machine.
func runAgainst(ctx context.Context, kubeconfig, manager string) error {
	fmt.Printf("KUBECONFIG=%s: installing cf-hnc's CRDs and configuration, then running the manager against that cluster.\n", kubeconfig)
	if err := controlplane.Install(ctx, kubeconfig); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, manager, "--kubeconfig="+kubeconfig, "--enable-webhooks=false")
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
