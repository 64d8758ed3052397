package orgspace_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"code.cloudfoundry.org/cf-hnc/internal/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/manager"
)

const root = "cf"

var (
	cp  *controlplane.ControlPlane
	k8s client.Client
)

func TestOrgSpace(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "org-space integration (apiserver, kube-controller-manager, HNC)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	cp, err = controlplane.Start(ctx, controlplane.Options{
		WorkDir:           GinkgoT().TempDir(),
		ControllerManager: true,
		HNC:               true,
		Webhooks:          true,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Stop)
	k8s = cp.Client

	host, port, certDir := cp.Webhooks()
	opts := manager.Options()
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.WebhookServer = webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: certDir})
	mgr, err := ctrl.NewManager(cp.Config, opts)
	Expect(err).NotTo(HaveOccurred())
	Expect(manager.Setup(mgr, manager.Config{RootNamespace: root, Webhooks: true})).To(Succeed())
	mgrCtx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(mgrCtx) }()
	DeferCleanup(func() {
		stop()
		Eventually(done, time.Minute).Should(Receive(BeNil()))
	})
	Expect(cp.RegisterWebhooks()).To(Succeed())
}, NodeTimeout(5*time.Minute))

var _ = AfterEach(func() {
	Expect(cp.Healthy()).To(Succeed())
})
