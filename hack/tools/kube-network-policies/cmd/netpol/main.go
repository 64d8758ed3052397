// Command netpol runs kube-network-policies' NetworkPolicy controller (sigs.k8s.io/
// kube-network-policies) on the local control plane's node, configured for it: its nftables
// table and nfqueue are the work directory's own, so that several control planes share a
// machine; NRI is off (containerd 1.6 has none); the conntrack race fix for kernels before 6.12
// is off; it fails closed; it stops on SIGTERM, as the kubelet stops a pod, and removes its
// table then. Upstream's command (cmd/main.go of the module) fixes the table's name and stops
// only on SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

func main() {
	var cfg networkpolicy.Config
	flag.IntVar(&cfg.QueueID, "nfqueue-id", 100, "the nfqueue that connections wait in for a verdict")
	flag.StringVar(&cfg.NodeName, "hostname-override", "", "the name of the node it runs on")
	flag.StringVar(&cfg.NFTableName, "nftables-table", "kube-network-policies", "the nftables inet table of its rules")
	klog.InitFlags(nil)
	flag.Parse()
	cfg.NRIdisabled = true
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "netpol:", err)
		os.Exit(1)
	}
}

func run(cfg networkpolicy.Config) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	config, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(clientset, 0)
	controller, err := networkpolicy.NewController(clientset,
		factory.Networking().V1().NetworkPolicies(), factory.Core().V1().Namespaces(), factory.Core().V1().Pods(),
		nil, nil, nil, nil, cfg)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		utilruntime.HandleError(controller.Run(ctx))
	}()
	factory.Start(ctx.Done())
	<-ctx.Done()
	// Run removes the table and the queue once its context ends.
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	return nil
}
