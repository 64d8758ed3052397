package buildpacks_test

import (
	"debug/elf"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
)

var _ = Describe("the binaries", Ordered, func() {
	var cnbBuildpack, staticfileServer string

	BeforeAll(func() {
		// The binaries run on whatever stack the builder has, so they link nothing.
		static := []string{"CGO_ENABLED=0"}
		var err error
		cnbBuildpack, err = gexec.BuildWithEnvironment("code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks/cmd/cnb-buildpack", static)
		Expect(err).NotTo(HaveOccurred())
		staticfileServer, err = gexec.BuildWithEnvironment("code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks/cmd/staticfile-server", static)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
	})

	// packaged makes the directory of the buildpack with id at version as it is packaged.
	packaged := func(id, version string) string {
		GinkgoHelper()
		descriptor, err := buildpacks.BuildpackTOML(id, version)
		Expect(err).NotTo(HaveOccurred())
		dir := newDir(map[string]string{"buildpack.toml": string(descriptor)})
		Expect(os.Mkdir(filepath.Join(dir, "bin"), 0o755)).To(Succeed())
		for name, binary := range map[string]string{"detect": cnbBuildpack, "build": cnbBuildpack, "staticfile-server": staticfileServer} {
			Expect(copyFile(binary, filepath.Join(dir, "bin", name))).To(Succeed())
		}
		return dir
	}

	// runPhase runs bin/<phase> of buildpack on app as the lifecycle does, and waits for it.
	runPhase := func(phase, buildpack, app, layers string) *gexec.Session {
		GinkgoHelper()
		l := lifecycle(phase, buildpack, layers)
		cmd := exec.Command(filepath.Join(buildpack, "bin", phase), l.args...)
		cmd.Dir = app
		cmd.Env = l.env
		session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		return session.Wait()
	}

	It("are statically linked", func() {
		for _, binary := range []string{cnbBuildpack, staticfileServer} {
			file, err := elf.Open(binary)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(file.Close)
			Expect(file.Progs).NotTo(ContainElement(HaveField("Type", elf.PT_INTERP)), binary)
			Expect(file.Section(".dynamic")).To(BeNil(), binary)
		}
	})

	It("detect and build a static site as bin/detect and bin/build of the staticfile buildpack", func() {
		buildpack := packaged(buildpacks.StaticfileID, "1.2.3")
		app := newDir(map[string]string{"Staticfile": "root: public\n", "public/index.html": "hi"})
		layers := GinkgoT().TempDir()

		detect := runPhase("detect", buildpack, app, "")
		Expect(detect).To(gexec.Exit(0))
		Expect(detect.Out.Contents()).To(BeEquivalentTo("cf-hnc/staticfile 1.2.3\nfound Staticfile\n"))
		Expect(runPhase("detect", buildpack, newDir(map[string]string{"Procfile": "web: ./server"}), "")).To(gexec.Exit(100))

		build := runPhase("build", buildpack, app, layers)
		Expect(build).To(gexec.Exit(0))
		Expect(build.Out.Contents()).To(BeEquivalentTo("cf-hnc/staticfile 1.2.3\nprocess web: [\"staticfile-server\" \"-root\" \"public\"]\n"))
		Expect(launchProcesses(layers)).To(Equal([]process{
			{Type: "web", Command: []string{"staticfile-server", "-root", "public"}, Args: []string{}, Default: true},
		}))
		installed, err := os.ReadFile(filepath.Join(layers, "server", "bin", "staticfile-server"))
		Expect(err).NotTo(HaveOccurred())
		built, err := os.ReadFile(staticfileServer)
		Expect(err).NotTo(HaveOccurred())
		Expect(installed).To(Equal(built))
	})

	It("fail the build of a bad Procfile with its line on stderr", func() {
		buildpack := packaged(buildpacks.ProcfileID, "1.2.3")
		app := newDir(map[string]string{"Procfile": "web: ./server\nweb: ./other\n"})

		build := runPhase("build", buildpack, app, GinkgoT().TempDir())
		Expect(build).To(gexec.Exit(1))
		Expect(build.Err.Contents()).To(BeEquivalentTo("Procfile:2: duplicate process type \"web\"\n"))
	})

	It("serve a directory on $PORT until SIGTERM", func() {
		site := newDir(map[string]string{"index.html": "home", "css/site.css": "body{}"})
		port := freePort()
		cmd := exec.Command(staticfileServer, "-root", site, "-host", "127.0.0.1")
		cmd.Env = []string{"PORT=" + port}
		server, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(server.Kill)
		Eventually(server.Out).Should(gbytes.Say("serving " + site + " on 127.0.0.1:" + port + "\n"))

		response, err := http.Get(fmt.Sprintf("http://127.0.0.1:%s/css/site.css", port))
		Expect(err).NotTo(HaveOccurred())
		defer response.Body.Close()
		Expect(response.StatusCode).To(Equal(http.StatusOK))
		Expect(io.ReadAll(response.Body)).To(BeEquivalentTo("body{}"))
		Eventually(server.Out).Should(gbytes.Say(`GET /css/site.css 200 6 `))

		server.Terminate()
		Eventually(server, "5s").Should(gexec.Exit(0))
	})
})

// freePort is a port of 127.0.0.1 that nothing listens on.
func freePort() string {
	GinkgoHelper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer listener.Close()
	_, port, err := net.SplitHostPort(listener.Addr().String())
	Expect(err).NotTo(HaveOccurred())
	return port
}

func copyFile(src, dst string) error {
	content, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, content, 0o755)
}
