package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestRollout(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "rollout (unit; apiserver)")
}

var epoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
