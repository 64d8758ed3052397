package orgspace_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

const root = testenv.RootNamespace

var (
	k8s client.Client
	// watcher watches, for the specs that look at every state an object goes through.
	watcher client.WithWatch
)

func TestOrgSpace(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "org-space (apiserver, kube-controller-manager, HNC)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	cp := testenv.Start(ctx, "org-space")
	k8s = cp.Client
	var err error
	watcher, err = client.NewWithWatch(cp.Config, client.Options{Scheme: k8s.Scheme()})
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(5*time.Minute))

var _ = AfterEach(testenv.ExpectHealthy)
