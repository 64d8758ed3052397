// Package e2e runs cf-hnc end to end. By default on the local control plane as `make run`
// starts it: kube-apiserver, etcd, kube-controller-manager, an in-memory registry and a node,
// on which HNC, kpack and cf-hnc (its manager and CF API, from an image built from this tree)
// run as pods, installed from their manifests as an operator installs them. Every spec runs
// there (`make test`).
//
// With CF_HNC_E2E_KUBECONFIG (`make e2e-cluster`) it runs against that cluster instead, which
// must run HNC, kpack and cf-hnc (`make deploy`, or `make kind-up`). Only the specs labelled
// "cluster" run then, less those labelled "local": the specs that need the local harness (its
// registry users and faults, the node, stopping the manager, publishing images) are local-only,
// and a spec is local-only until it is labelled "cluster", so that a new spec never touches a
// real cluster by accident. The specs remove what they made in a cluster.
package e2e_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/install"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

const root = "cf"

// The labels that say where a spec runs.
const (
	// clusterLabel marks a spec that needs only a cluster with HNC, kpack and cf-hnc.
	clusterLabel = "cluster"
	// localLabel marks a spec that needs the local harness.
	localLabel = "local"
)

var (
	// cp is the local control plane; nil against an external cluster.
	cp  *controlplane.ControlPlane
	k8s client.Client
	// external is the kubeconfig of an external cluster, if the suite runs against one.
	external = os.Getenv("CF_HNC_E2E_KUBECONFIG")
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(time.Minute)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	description := "e2e (local control plane)"
	if external != "" {
		suiteConfig.LabelFilter = clusterFilter(suiteConfig.LabelFilter)
		description = "e2e (cluster of " + external + ")"
	}
	RunSpecs(t, description, suiteConfig, reporterConfig)
}

// clusterFilter narrows a label filter to the specs that may run against a cluster.
func clusterFilter(filter string) string {
	only := clusterLabel + " && !" + localLabel
	if filter == "" {
		return only
	}
	return "(" + filter + ") && " + only
}

var _ = BeforeSuite(func(ctx SpecContext) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	if external != "" {
		k8s = clusterClient(ctx, external)
		return
	}
	var err error
	cp, err = controlplane.Start(ctx, controlplane.Options{
		WorkDir:           ".local/e2e",
		ControllerManager: true,
		HNC:               true,
		Kpack:             true,
		Node:              true,
		DefaultBuilder:    true,
		CFHNC:             true,
		Gateway:           true,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Stop)
	k8s = cp.Client
}, NodeTimeout(10*time.Minute))

// clusterClient connects to an external cluster and checks that cf-hnc runs there.
func clusterClient(ctx context.Context, kubeconfig string) client.Client {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: cfscheme.New()})
	Expect(err).NotTo(HaveOccurred())
	deployment := &appsv1.Deployment{}
	Eventually(func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: install.Namespace, Name: install.ManagerDeployment}, deployment); err != nil {
			return err
		}
		if deployment.Status.ReadyReplicas == 0 {
			return fmt.Errorf("no replica of %s/%s is ready", install.Namespace, install.ManagerDeployment)
		}
		return nil
	}, 2*time.Minute).Should(Succeed(), "cf-hnc runs in %s (make deploy)", kubeconfig)
	return c
}

// A component that died fails the spec that was running, with its log.
var _ = AfterEach(func() {
	if cp != nil {
		Expect(cp.Healthy()).To(Succeed())
	}
})

// inCluster registers the removal of obj when the suite runs against an external cluster; the
// local control plane is thrown away whole.
func inCluster(cleanup func(context.Context)) {
	if external != "" {
		DeferCleanup(func(ctx SpecContext) { cleanup(ctx) })
	}
}
