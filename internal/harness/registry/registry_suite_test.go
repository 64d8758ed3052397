package registry_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
)

func TestRegistry(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Registry Suite")
}

// sources are what the seeded images are made of, as the local control plane has them.
var sources registry.Sources

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	sources, err = controlplane.SeedSources(ctx, controlplane.Options{WorkDir: ".local/registry-test"})
	Expect(err).NotTo(HaveOccurred())
})
