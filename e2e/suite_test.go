// Package e2e runs cf-hnc end to end on the local control plane: kube-apiserver, etcd,
// kube-controller-manager, the HNC manager, the kpack controller with an in-memory registry,
// and the cf-hnc manager as a process, as `make run` starts them.
package e2e_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
)

const root = "cf"

var (
	cp  *controlplane.ControlPlane
	k8s client.Client
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(time.Minute)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "e2e (local control plane)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	manager, err := gexec.Build("code.cloudfoundry.org/cf-hnc")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(gexec.CleanupBuildArtifacts)

	cp, err = controlplane.Start(ctx, controlplane.Options{
		WorkDir:           ".local/e2e",
		ControllerManager: true,
		HNC:               true,
		Kpack:             true,
		StandInKubelet:    true,
		DefaultBuilder:    true,
		Manager:           manager,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Stop)
	k8s = cp.Client
}, NodeTimeout(5*time.Minute))

// A component that died fails the spec that was running, with its log.
var _ = AfterEach(func() { Expect(cp.Healthy()).To(Succeed()) })
