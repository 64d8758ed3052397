package controlplane

import (
	"context"
	"fmt"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// Install applies cf-hnc's CRDs, the HNC configuration and the root namespace to the cluster of
// a kubeconfig, for running the manager against a real cluster that has HNC and kpack.
func Install(ctx context.Context, kubeconfig string) error {
	p, err := findPaths(Options{})
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: cfscheme.New()})
	if err != nil {
		return err
	}
	files, err := filepath.Glob(p.config("crd", "bases", "*.yaml"))
	if err != nil {
		return err
	}
	files = append(files, p.config("hnc", "hncconfiguration.yaml"), p.config("root", "namespace.yaml"))
	for _, file := range files {
		if err := applyFile(ctx, c, file); err != nil {
			return fmt.Errorf("%w (is HNC installed in the cluster?)", err)
		}
	}
	return nil
}
