package standinkubelet

import (
	"code.cloudfoundry.org/cf-hnc/internal/cnb"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("detect", func() {
	It("takes the first group of the builder's order, with composite buildpacks expanded", func() {
		found, err := detect(builderFixture("127.0.0.1:5000/run"))

		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(Equal(detected{buildpacks: expectedBuildpacks, lifecycleVersion: testLifecycleVersion, stackRunImage: "127.0.0.1:5000/run"}))
	})

	It("fails as the lifecycle does when the order is empty", func() {
		labels := labelsOf(builderFixture("127.0.0.1:5000/run"))
		labels[cnb.BuildpackOrderLabel] = "[]"

		_, err := detect(imageOf(labels))

		Expect(err).To(MatchError(errNoGroup))
	})
})

var _ = Describe("processes", func() {
	It("makes one process per Procfile line, web being the default", func() {
		procs, err := processes([]byte("# comment\nweb: bundle exec rackup -p $PORT\n\nworker:sidekiq\n"), expectedBuildpacks)

		Expect(err).NotTo(HaveOccurred())
		Expect(procs).To(Equal([]process{
			{Type: "web", Command: "bundle exec rackup -p $PORT", Default: true, BuildpackID: "cf/procfile"},
			{Type: "worker", Command: "sidekiq", BuildpackID: "cf/procfile"},
		}))
	})

	It("has none without a Procfile", func() {
		Expect(processes(nil, expectedBuildpacks)).To(BeEmpty())
	})

	It("fails on a line that is no process", func() {
		_, err := processes([]byte("web: ok\nnot a process\n"), expectedBuildpacks)
		Expect(err).To(MatchError(ContainSubstring("line 2")))
	})
})
