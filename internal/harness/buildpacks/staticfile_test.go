package buildpacks_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
)

var _ = Describe("the staticfile buildpack", func() {
	var buildpack, layers string

	BeforeEach(func() {
		buildpack = newBuildpack(buildpacks.StaticfileID, "1.0.0")
		layers = GinkgoT().TempDir()
	})

	DescribeTable("detects an app with a Staticfile at its root",
		func(files map[string]string, code int) {
			Expect(run("detect", buildpack, newDir(files), "").code).To(Equal(code))
		},
		Entry("an empty Staticfile", map[string]string{"Staticfile": "", "index.html": "hi"}, 0),
		Entry("a Staticfile with a root", map[string]string{"Staticfile": "root: public\n", "public/index.html": "hi"}, 0),
		Entry("no Staticfile", map[string]string{"index.html": "hi"}, 100),
		Entry("a Staticfile only below the root", map[string]string{"public/Staticfile": ""}, 100),
		Entry("a directory named Staticfile", map[string]string{"Staticfile/index.html": "hi"}, 100),
	)

	It("installs the server in a launch layer and makes it the default web process", func() {
		got := run("build", buildpack, newDir(map[string]string{"Staticfile": "", "index.html": "hi"}), layers)
		Expect(got.code).To(Equal(0), got.stderr)
		Expect(got.stdout).To(Equal("cf-hnc/staticfile 1.0.0\nprocess web: [\"staticfile-server\" \"-root\" \".\"]\n"))

		Expect(launchProcesses(layers)).To(Equal([]process{
			{Type: "web", Command: []string{"staticfile-server", "-root", "."}, Args: []string{}, Default: true},
		}))
		var layer struct {
			Types struct {
				Launch bool `toml:"launch"`
			} `toml:"types"`
		}
		decodeStrictly(filepath.Join(layers, "server.toml"), &layer)
		Expect(layer.Types.Launch).To(BeTrue())

		// The launcher puts <layer>/bin on PATH.
		server := filepath.Join(layers, "server", "bin", "staticfile-server")
		Expect(os.ReadFile(server)).To(BeEquivalentTo(serverStandIn))
		info, err := os.Stat(server)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o755)))
	})

	DescribeTable("serves the root that the Staticfile names, relative to the app",
		func(staticfile, root string) {
			app := newDir(map[string]string{"Staticfile": staticfile, "public/index.html": "hi", "site/dist/index.html": "hi"})
			got := run("build", buildpack, app, layers)
			Expect(got.code).To(Equal(0), got.stderr)
			Expect(launchProcesses(layers)).To(ConsistOf(HaveField("Command", []string{"staticfile-server", "-root", root})))
		},
		Entry("a directory", "root: public\n", "public"),
		Entry("a directory spelled loosely", "root: ./public/", "public"),
		Entry("a nested directory among comments, blank lines and CRLFs", "# the site\r\n\r\nroot:   site/dist  \r\n", "site/dist"),
		Entry("the app's root", "root: .\n", "."),
	)

	DescribeTable("fails the build with one line that names the Staticfile and the problem",
		func(staticfile, message string) {
			app := newDir(map[string]string{"Staticfile": staticfile, "index.html": "hi", "public/index.html": "hi"})
			expectFailedBuild(run("build", buildpack, app, layers), layers, message)
		},
		Entry("an option that Cloud Foundry has and the buildpack lacks", "root: public\npushstate: enabled\n",
			`Staticfile:2: unknown option "pushstate", only root is supported`),
		Entry("a line that is no option", "# site\nroot public\n",
			`Staticfile:2: malformed line "root public", want "<option>: <value>"`),
		Entry("a line without an option", ": public\n",
			`Staticfile:1: malformed line ": public", want "<option>: <value>"`),
		Entry("a root without a value", "root:\n", "Staticfile:1: root has no value"),
		Entry("two roots", "root: public\nroot: public\n", "Staticfile:2: root is set twice"),
		Entry("a line that is not UTF-8", "root: caf\xe9\n", "Staticfile:1: not UTF-8 text"),
		Entry("a root that does not exist", "root: dist\n", `Staticfile: root "dist" is not a directory of the app`),
		Entry("a root that is a file", "root: index.html\n", `Staticfile: root "index.html" is not a directory of the app`),
		Entry("a root above the app", "root: public/../..\n", `Staticfile: root ".." is not a directory of the app`),
		Entry("an absolute root", "root: /tmp\n", `Staticfile: root "/tmp" is not a directory of the app`),
	)

	It("fails the build for a root that links out of the app", func() {
		app := newDir(map[string]string{"Staticfile": "root: site\n"})
		Expect(os.Symlink(GinkgoT().TempDir(), filepath.Join(app, "site"))).To(Succeed())
		expectFailedBuild(run("build", buildpack, app, layers), layers,
			`Staticfile: root "site" is not a directory of the app`)
	})

	It("fails the build when the buildpack lacks its server", func() {
		Expect(os.Remove(filepath.Join(buildpack, "bin", "staticfile-server"))).To(Succeed())
		got := run("build", buildpack, newDir(map[string]string{"Staticfile": ""}), layers)
		Expect(got.code).To(Equal(1))
		Expect(got.stderr).To(Equal("open " + filepath.Join(buildpack, "bin", "staticfile-server") + ": no such file or directory\n"))
		Expect(filepath.Join(layers, "launch.toml")).NotTo(BeAnExistingFile())
	})
})

// expectFailedBuild expects a build that failed with message on stderr and wrote nothing.
func expectFailedBuild(got result, layers, message string) {
	GinkgoHelper()
	Expect(got.code).To(Equal(1))
	Expect(got.stderr).To(Equal(message + "\n"))
	Expect(os.ReadDir(layers)).To(BeEmpty())
}
