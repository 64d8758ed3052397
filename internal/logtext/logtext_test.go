package logtext_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/internal/logtext"
)

func TestLogtext(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "logtext")
}

var _ = DescribeTable("LastLines",
	func(log string, n int, want []string) { Expect(logtext.LastLines(log, n)).To(Equal(want)) },
	Entry("the last lines, blank ones left out", "a\n\nb\n  c  \n\n", 2, []string{"b", "c"}),
	Entry("all of a short log", "a\nb\n", 5, []string{"a", "b"}),
	Entry("without colour codes", "\x1b[31;1mERROR: \x1b[0mfailed to build: exit status 1\n", 1, []string{"ERROR: failed to build: exit status 1"}),
	Entry("nothing of an empty log", "\n \n", 3, []string(nil)),
)
