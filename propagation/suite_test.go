package propagation_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

var k8s client.Client

func TestPropagation(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "propagation (unit; apiserver, kube-controller-manager, HNC)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	k8s = testenv.Start(ctx, "propagation").Client
}, NodeTimeout(5*time.Minute))

var _ = AfterEach(testenv.ExpectHealthy)
