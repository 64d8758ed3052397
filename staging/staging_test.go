package staging

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/internal/cftest"
)

func TestStaging(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "staging (unit; apiserver)")
}

var (
	defaultBuilder = cftest.DefaultBuilder()
	space          = cftest.BuildConfig()
)
