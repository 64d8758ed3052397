package buildpacks_test

import (
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
)

var _ = Describe("the buildpacks' descriptors", func() {
	It("lists the buildpacks in Cloud Foundry's detection order", func() {
		Expect(buildpacks.IDs()).To(Equal([]string{"cf-hnc/staticfile", "cf-hnc/procfile"}))
	})

	It("renders buildpack.toml for Buildpack API 0.10 and any stack", func() {
		for _, id := range buildpacks.IDs() {
			content, err := buildpacks.BuildpackTOML(id, "1.2.3")
			Expect(err).NotTo(HaveOccurred())
			path := filepath.Join(newDir(map[string]string{"buildpack.toml": string(content)}), "buildpack.toml")

			var descriptor struct {
				API       string `toml:"api"`
				Buildpack struct {
					ID      string `toml:"id"`
					Version string `toml:"version"`
					Name    string `toml:"name"`
				} `toml:"buildpack"`
				Stacks []struct {
					ID string `toml:"id"`
				} `toml:"stacks"`
			}
			decodeStrictly(path, &descriptor)
			Expect(descriptor.API).To(Equal("0.10"))
			Expect(descriptor.Buildpack.ID).To(Equal(id))
			Expect(descriptor.Buildpack.Version).To(Equal("1.2.3"))
			Expect(descriptor.Buildpack.Name).NotTo(BeEmpty())
			Expect(descriptor.Stacks).To(HaveLen(1))
			Expect(descriptor.Stacks[0].ID).To(Equal("*"))
		}
	})

	DescribeTable("refuses what it cannot describe",
		func(id, version, message string) {
			_, err := buildpacks.BuildpackTOML(id, version)
			Expect(err).To(MatchError(message))
		},
		Entry("another buildpack", "paketo-buildpacks/go", "1.0.0", `unknown buildpack id "paketo-buildpacks/go"`),
		Entry("no version", "cf-hnc/procfile", "", "buildpack cf-hnc/procfile needs a version"),
	)
})

var _ = Describe("a buildpack's programs", func() {
	var app string

	BeforeEach(func() {
		app = newDir(map[string]string{"Procfile": "web: ./server\n"})
	})

	It("report the version of their buildpack.toml, so that one binary serves every version", func() {
		for _, version := range []string{"1.0.0", "1.0.1-upgrade"} {
			Expect(run("detect", newBuildpack(buildpacks.ProcfileID, version), app, "")).
				To(Equal(result{code: 0, stdout: "cf-hnc/procfile " + version + "\nfound Procfile\n"}))
		}
	})

	It("find buildpack.toml next to their bin directory without CNB_BUILDPACK_DIR", func() {
		buildpack := newBuildpack(buildpacks.ProcfileID, "2.0.0")
		layers := GinkgoT().TempDir()

		got := runAs(filepath.Join(buildpack, "bin", "build"), app, []string{"CNB_LAYERS_DIR=" + layers})
		Expect(got.code).To(Equal(0), got.stderr)
		Expect(got.stdout).To(HavePrefix("cf-hnc/procfile 2.0.0\n"))
		Expect(filepath.Join(layers, "launch.toml")).To(BeARegularFile())
	})

	// <buildpack> in a message stands for the buildpack's directory.
	DescribeTable("fail with one line on stderr",
		func(descriptor string, program string, env func(buildpack string) []string, message string) {
			buildpack := newDir(map[string]string{"buildpack.toml": descriptor})
			got := runAs(filepath.Join(buildpack, "bin", program), app, env(buildpack))
			Expect(got.code).To(Equal(1))
			Expect(got.stderr).To(Equal(strings.ReplaceAll(message, "<buildpack>", buildpack) + "\n"))
		},
		Entry("run under another name", procfileTOML("0.10", "1.0.0"), "cnb-buildpack", buildpackDirEnv,
			"cf-hnc/procfile runs as bin/detect or bin/build, not as cnb-buildpack"),
		Entry("a build without a layers directory", procfileTOML("0.10", "1.0.0"), "build", buildpackDirEnv,
			"CNB_LAYERS_DIR is not set"),
		Entry("another Buildpack API", procfileTOML("0.9", "1.0.0"), "detect", buildpackDirEnv,
			`<buildpack>/buildpack.toml: api is "0.9", want "0.10"`),
		Entry("no version", procfileTOML("0.10", ""), "detect", buildpackDirEnv,
			"<buildpack>/buildpack.toml: the buildpack has no version"),
		Entry("another buildpack", "api = \"0.10\"\n[buildpack]\nid = \"paketo-buildpacks/go\"\nversion = \"1.0.0\"\n",
			"detect", buildpackDirEnv, `<buildpack>/buildpack.toml: unknown buildpack id "paketo-buildpacks/go"`),
	)

	It("fail without a buildpack.toml", func() {
		dir := GinkgoT().TempDir()
		got := runAs(filepath.Join(dir, "bin", "detect"), app, nil)
		Expect(got.code).To(Equal(1))
		Expect(got.stderr).To(Equal("open " + filepath.Join(dir, "buildpack.toml") + ": no such file or directory\n"))
	})
})

// procfileTOML is a buildpack.toml of the procfile buildpack, with api and version.
func procfileTOML(api, version string) string {
	GinkgoHelper()
	content, err := toml.Marshal(map[string]any{
		"api":       api,
		"buildpack": map[string]string{"id": buildpacks.ProcfileID, "version": version},
	})
	Expect(err).NotTo(HaveOccurred())
	return string(content)
}

func buildpackDirEnv(buildpack string) []string {
	return []string{"CNB_BUILDPACK_DIR=" + buildpack}
}
