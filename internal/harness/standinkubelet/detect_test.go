package standinkubelet

import (
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackcorev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"

	"code.cloudfoundry.org/cf-hnc/internal/cnb"
)

var _ = Describe("detect", func() {
	detectFor := func(files ...string) (detected, error) {
		return detect(builderFixture("127.0.0.1:5000/run"), files)
	}
	ids := func(found detected) []string {
		var ids []string
		for _, bp := range found.buildpacks {
			ids = append(ids, bp.Id)
		}
		return ids
	}

	It("takes the first group whose buildpacks detect, with composite buildpacks expanded", func() {
		found, err := detectFor("Procfile", "app")

		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(Equal(detected{buildpacks: expectedBuildpacks, lifecycleVersion: testLifecycleVersion, stackRunImage: "127.0.0.1:5000/run"}))
	})

	It("runs only the first group that detects, though a later one would too", func() {
		Expect(ids(must(detectFor("main.go", "Procfile")))).To(Equal([]string{"cf/go"}))
		Expect(ids(must(detectFor("go.mod")))).To(Equal([]string{"cf/go"}))
	})

	It("leaves out an optional buildpack that does not detect", func() {
		Expect(ids(must(detectFor("app.rb")))).To(Equal([]string{"cf/mri", "cf/bundler"}))
	})

	It("matches files at the app's root only", func() {
		Expect(ids(must(detectFor("cmd")))).To(Equal([]string{"cf/mri", "cf/bundler"}), "cmd/main.go is not at the root")
	})

	It("fails as the lifecycle does when no group passes", func() {
		labels := labelsOf(builderFixture("127.0.0.1:5000/run"))
		Expect(setLabel(labels, cnb.BuildpackOrderLabel, kpackcorev1alpha1.Order{{Group: []kpackcorev1alpha1.BuildpackRef{
			{BuildpackInfo: kpackcorev1alpha1.BuildpackInfo{Id: "cf/go", Version: "3.0.0"}},
			{BuildpackInfo: kpackcorev1alpha1.BuildpackInfo{Id: "cf/procfile", Version: "2.0.0"}},
		}}})).To(Succeed())
		builder := must(mutate.Config(builderFixture("127.0.0.1:5000/run"), v1.Config{Labels: labels}))

		_, err := detect(builder, []string{"main.go"})
		Expect(err).To(MatchError(errNoGroup), "a required buildpack that does not detect fails its group")
	})

	It("fails as the lifecycle does when the order is empty", func() {
		labels := labelsOf(builderFixture("127.0.0.1:5000/run"))
		labels[cnb.BuildpackOrderLabel] = "[]"

		_, err := detect(imageOf(labels), nil)

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
