package cnb_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/internal/cnb"
)

func TestCNB(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "cnb (unit)")
}

var _ = Describe("the processes of a droplet", func() {
	It("reads commands as lists (platform API 0.10 and later) and as strings with args", func() {
		Expect(cnb.Processes(`{"processes":[{"type":"web","command":["./app","--port","8080"]},{"type":"worker","command":"bundle","args":["exec","sidekiq"]}]}`)).
			To(Equal([]cnb.Process{{Type: "web", Command: "./app --port 8080"}, {Type: "worker", Command: "bundle exec sidekiq"}}))
	})

	DescribeTable("says what is wrong with the label",
		func(label, message string) {
			_, err := cnb.Processes(label)
			Expect(err).To(MatchError(message))
		},
		Entry("no label", "", "the droplet has no io.buildpacks.build.metadata label"),
		Entry("a command that is a number", `{"processes":[{"type":"web","command":7}]}`,
			`io.buildpacks.build.metadata: process "web": command is neither a string nor a list`),
		Entry("no JSON", `{"processes":`, "io.buildpacks.build.metadata: unexpected end of JSON input"),
	)
})
