package upgrades

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestUpgrades(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "upgrades (unit; apiserver)")
}
