// Package testenv starts what an integration suite runs against: the local control plane
// (kube-apiserver, etcd, kube-controller-manager, HNC with its webhooks) and, in the test
// process, a manager with every cf-hnc reconciler and webhook as main.go wires them.
package testenv

import (
	"context"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/manager"
)

// RootNamespace is the root namespace of the suites.
const RootNamespace = controlplane.RootNamespace

// BuilderNamespace holds the ServiceAccounts that the suites' root default Builders push with.
const BuilderNamespace = controlplane.BuilderNamespace

// Start starts the control plane and the manager for a suite, registers their teardown with
// DeferCleanup, and sets suite-wide Eventually defaults. Call it from BeforeSuite; the logs of
// the suite's components stay in .local/<suite> after the run.
func Start(ctx context.Context, suite string) *controlplane.ControlPlane {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	cp, err := controlplane.Start(ctx, controlplane.Options{
		WorkDir:           filepath.Join(".local", suite),
		ControllerManager: true,
		HNC:               true,
		Webhooks:          true,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Stop)

	host, port, certDir := cp.Webhooks()
	opts, err := manager.Options(RootNamespace)
	Expect(err).NotTo(HaveOccurred())
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	opts.WebhookServer = webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: certDir})
	mgr, err := ctrl.NewManager(cp.Config, opts)
	Expect(err).NotTo(HaveOccurred())
	Expect(manager.Setup(mgr, manager.Config{RootNamespace: RootNamespace, BuilderNamespace: BuilderNamespace, Webhooks: true})).To(Succeed())
	RunManager(mgr)
	Expect(cp.RegisterWebhooks()).To(Succeed())
	running = cp
	return cp
}

var running *controlplane.ControlPlane

// RunManager starts mgr and registers its stop, which must be clean, with DeferCleanup.
func RunManager(mgr ctrl.Manager) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	DeferCleanup(func() {
		stop()
		Eventually(done, time.Minute).Should(Receive(BeNil()))
	})
}

// ExpectHealthy fails the spec if a component of the control plane died, naming it and its
// log. Register it with AfterEach.
func ExpectHealthy() {
	if running != nil {
		Expect(running.Healthy()).To(Succeed())
	}
}

// Update changes obj as a user would: on the latest version, again after a conflict with a
// controller that wrote it meanwhile.
func Update(ctx context.Context, c client.Client, obj client.Object, change func()) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return c.Update(ctx, obj)
	})).To(Succeed())
}

// CreateOrg creates an org with a display name, waits until it is Ready and returns its GUID.
func CreateOrg(ctx context.Context, c client.Client, displayName string) string {
	GinkgoHelper()
	org := &cfv1alpha1.CFOrg{
		ObjectMeta: metav1.ObjectMeta{Namespace: RootNamespace, Name: string(uuid.NewUUID())},
		Spec:       cfv1alpha1.CFOrgSpec{DisplayName: displayName},
	}
	Expect(c.Create(ctx, org)).To(Succeed())
	Eventually(ready(ctx, c, org, &org.Status.Conditions)).Should(BeTrue(), "org %q Ready", displayName)
	return org.Name
}

// CreateSpace creates a space in an org, waits until it is Ready and returns its GUID.
func CreateSpace(ctx context.Context, c client.Client, org, displayName string) string {
	GinkgoHelper()
	space := &cfv1alpha1.CFSpace{
		ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: string(uuid.NewUUID())},
		Spec:       cfv1alpha1.CFSpaceSpec{DisplayName: displayName},
	}
	Expect(c.Create(ctx, space)).To(Succeed())
	Eventually(ready(ctx, c, space, &space.Status.Conditions)).Should(BeTrue(), "space %q Ready", displayName)
	return space.Name
}

func ready(ctx context.Context, c client.Client, obj client.Object, conditions *[]metav1.Condition) func() bool {
	return func() bool {
		Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return meta.IsStatusConditionTrue(*conditions, cfv1alpha1.ReadyCondition)
	}
}
