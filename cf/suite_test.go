package cf_test

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

var (
	cp  *controlplane.ControlPlane
	k8s client.Client
)

func TestCF(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "cf (unit; apiserver, kube-controller-manager, HNC, cf-hnc's reconcilers)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	cp = testenv.Start(ctx, "cf")
	k8s = cp.Client
	cftest.ApplyCFRoles(ctx, k8s, filepath.Join("..", "config"))
}, NodeTimeout(5*time.Minute))

var _ = AfterEach(testenv.ExpectHealthy)
