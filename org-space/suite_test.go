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

var k8s client.Client

func TestOrgSpace(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "org-space (apiserver, kube-controller-manager, HNC)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	k8s = testenv.Start(ctx, "org-space").Client
}, NodeTimeout(5*time.Minute))

var _ = AfterEach(testenv.ExpectHealthy)
