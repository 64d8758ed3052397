package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// This suite runs no kpack, so no space here can build: push's refusals are specified here,
// its staging in e2e/push_test.go.
var _ = Describe("push, with input it must refuse", func() {
	var org, orgGUID, space string

	BeforeEach(func(ctx SpecContext) {
		org = unique("acme")
		orgGUID = createOrg(ctx, org)
		space = createSpace(ctx, org, "dev")
	})

	// pushRefused runs push and expects message, and nothing created in the space.
	pushRefused := func(ctx SpecContext, message string, args ...string) {
		GinkgoHelper()
		out, err := kubectlCF(ctx, append([]string{"push"}, args...)...)
		Expect(err).To(MatchError(message))
		Expect(out).To(BeEmpty())
		expectNothingIn(ctx, space)
	}

	DescribeTable("says what is wrong and creates nothing",
		func(ctx SpecContext, input func() (args []string, message string)) {
			args, message := input()
			pushRefused(ctx, message, args...)
		},
		Entry("an unknown org", func() ([]string, string) {
			return []string{"web", "-o", "no-such-org", "-s", "dev", "-p", appDir()},
				`org "no-such-org" not found: no org in namespace "cf" has that name or GUID`
		}),
		Entry("an unknown space", func() ([]string, string) {
			return []string{"web", "-o", org, "-s", "no-such-space", "-p", appDir()},
				fmt.Sprintf(`space "no-such-space" not found: org %q has no space with that name or GUID`, org)
		}),
		Entry("an org without a space", func() ([]string, string) {
			return []string{"web", "-o", org, "-p", appDir()}, fmt.Sprintf(`--org %q: name the space in it with --space`, org)
		}),
		Entry("no space at all, and a kubeconfig context without a namespace", func() ([]string, string) {
			return []string{"web", "-p", appDir()},
				"no space given: name it with --org ORG --space SPACE, or with --namespace set to the space's namespace (its GUID)"
		}),
		Entry("a namespace that is not a space's", func() ([]string, string) {
			return []string{"web", "-n", orgGUID, "-p", appDir()},
				fmt.Sprintf(`namespace %q is not a space's: name the space with --org ORG --space SPACE`, orgGUID)
		}),
		Entry("an empty directory", func() ([]string, string) {
			dir := dirWith()
			return []string{"web", "-o", org, "-s", "dev", "-p", dir}, fmt.Sprintf(`directory %q is empty: there is nothing to push`, dir)
		}),
		Entry("a directory of which nothing is left to push", func() ([]string, string) {
			dir := dirWith("manifest.yml", "applications: []\n", ".cfignore", "*.log\n", "debug.log", "x\n")
			return []string{"web", "-o", org, "-s", "dev", "-p", dir},
				fmt.Sprintf(`directory %q has nothing to push: .cfignore and the default exclusions `+
					`(.cfignore, .DS_Store, .git, .gitignore, .hg, .svn, _darcs, manifest.yaml, manifest.yml) leave out all it holds`, dir)
		}),
		Entry("a directory that does not exist", func() ([]string, string) {
			return []string{"web", "-o", org, "-s", "dev", "-p", "/no/such/dir"}, `-p "/no/such/dir": no such file or directory`
		}),
		Entry("a file, not a directory", func() ([]string, string) {
			file := filepath.Join(appDir(), "Procfile")
			return []string{"web", "-o", org, "-s", "dev", "-p", file},
				fmt.Sprintf(`-p %q is not a directory: push the directory that holds the app's source`, file)
		}),
		Entry("a .cfignore pattern that cannot match", func() ([]string, string) {
			return []string{"web", "-o", org, "-s", "dev", "-p", dirWith(".cfignore", "*.log\n[z-a\n")},
				`.cfignore line 2: pattern "[z-a": syntax error in pattern`
		}),
		Entry("too many instances", func() ([]string, string) {
			return []string{"web", "-o", org, "-s", "dev", "-p", appDir(), "-i", "101"}, "-i 101: a process has 0 to 100 instances"
		}),
		Entry("a memory limit without a unit", func() ([]string, string) {
			return []string{"web", "-o", org, "-s", "dev", "-p", appDir(), "-m", "1024"},
				`-m "1024": give a whole number with a unit, M or G (MB and GB do too), as in 256M or 1G`
		}),
		Entry("a disk limit too small", func() ([]string, string) {
			return []string{"web", "-o", org, "-s", "dev", "-p", appDir(), "-k", "8M"}, "-k 8M: give 16M to 64G"
		}),
		Entry("an unknown health check type", func() ([]string, string) {
			return []string{"web", "-o", org, "-s", "dev", "-p", appDir(), "-u", "tcp"}, `-u "tcp": the health check type is port, http or process`
		}),
		Entry("an endpoint without an http health check", func() ([]string, string) {
			return []string{"web", "-o", org, "-s", "dev", "-p", appDir(), "--endpoint", "/health"},
				`--endpoint "/health": only an http health check has an endpoint: give -u http with it`
		}),
		Entry(`"-b default" with buildpacks`, func() ([]string, string) {
			return []string{"web", "-o", org, "-s", "dev", "-b", "default", "-b", "paketo-buildpacks/go"},
				`-b default -b paketo-buildpacks/go: "default" detects with the space's default Builder and cannot be combined with buildpacks`
		}),
	)

	It("refuses a space that cannot build, with its reason and what an operator must do", func(ctx SpecContext) {
		buildReady := meta.FindStatusCondition(cfSpace(ctx, orgGUID, space).Status.Conditions, cfv1alpha1.BuildReadyCondition)
		Expect(buildReady.Reason).To(Equal(cfv1alpha1.RegistryCredentialsMissingReason))
		pushRefused(ctx, fmt.Sprintf(`space "dev" of org %q cannot build: BuildReady is False (RegistryCredentialsMissing): %s; `+
			`an operator must place the org's registry credentials: `+
			`kubectl cf set-registry %s --server HOST --username USER --password-stdin --droplet-repository PREFIX`, org, buildReady.Message, org),
			"web", "-o", org, "-s", "dev", "-p", appDir())

		By("the org's registry in place, kpack's default Builder is what is missing here")
		_, err := kubectlCF(ctx, "set-registry", org, "--server", "registry.local", "--username", "u", "--password", "p",
			"--droplet-repository", "registry.local/acme")
		Expect(err).NotTo(HaveOccurred())
		buildReady = meta.FindStatusCondition(cfSpace(ctx, orgGUID, space).Status.Conditions, cfv1alpha1.BuildReadyCondition)
		Expect(buildReady.Reason).To(Equal(cfv1alpha1.BuilderMissingReason))
		pushRefused(ctx, fmt.Sprintf(`space "dev" of org %q cannot build: BuildReady is False (BuilderMissing): %s; `+
			`an operator must place a default kpack Builder labelled workloads.cloudfoundry.org/build-config=true in the org or the root namespace`,
			org, buildReady.Message),
			"web", "-n", space, "-p", appDir())
	})

	DescribeTable("refuses a directory it may not read, before it connects",
		func(ctx SpecContext, dir func() string, message func(dir string) string) {
			d := dir()
			session := runAsUnprivileged("push", "web", "-o", org, "-s", "dev", "-p", d)
			Eventually(session).Should(gexec.Exit(1))
			Expect(string(session.Err.Contents())).To(Equal("Error: " + message(d) + "\n"))
			expectNothingIn(ctx, space)
		},
		Entry("the directory", func() string { return unreadable(appDir()) },
			func(dir string) string { return fmt.Sprintf(`reading %q: permission denied`, dir) }),
		Entry("a file in it", func() string {
			dir := appDir()
			unreadable(filepath.Join(dir, "main.go"))
			return dir
		}, func(dir string) string {
			return fmt.Sprintf(`reading %q: permission denied`, filepath.Join(dir, "main.go"))
		}),
	)
})

// expectNothingIn expects no app, package or build in a space.
func expectNothingIn(ctx SpecContext, space string) {
	GinkgoHelper()
	for _, list := range []client.ObjectList{&cfv1alpha1.CFAppList{}, &cfv1alpha1.CFPackageList{}, &cfv1alpha1.CFBuildList{}} {
		Expect(k8s.List(ctx, list, client.InNamespace(space))).To(Succeed())
		Expect(meta.LenList(list)).To(BeZero(), "%T", list)
	}
}

// appDir is a directory with an app's source, readable by everyone.
func appDir() string {
	return dirWith("Procfile", "web: ./app\n", "main.go", "package main\n")
}

// dirWith makes a directory, readable by everyone, holding files given as name, content pairs.
func dirWith(files ...string) string {
	GinkgoHelper()
	dir, err := os.MkdirTemp("", "kubectl-cf-test-")
	Expect(err).NotTo(HaveOccurred())
	Expect(os.Chmod(dir, 0o755)).To(Succeed())
	DeferCleanup(os.RemoveAll, dir)
	for i := 0; i+1 < len(files); i += 2 {
		Expect(os.WriteFile(filepath.Join(dir, files[i]), []byte(files[i+1]), 0o644)).To(Succeed())
	}
	return dir
}

// unreadable takes every permission from path and returns it.
func unreadable(path string) string {
	GinkgoHelper()
	Expect(os.Chmod(path, 0)).To(Succeed())
	DeferCleanup(os.Chmod, path, os.FileMode(0o755))
	return path
}

// runAsUnprivileged runs the plugin binary; as root, it runs it as the user nobody, whom file
// permissions bind.
func runAsUnprivileged(args ...string) *gexec.Session {
	GinkgoHelper()
	cmd := exec.Command(pluginBinary(), append(args, "--kubeconfig", kubeconfig)...)
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	return session
}

// pluginBinary builds the plugin once per suite, where every user may run it.
var pluginBinary = sync.OnceValue(func() string {
	built, err := gexec.Build("code.cloudfoundry.org/cf-hnc/cmd/kubectl-cf")
	Expect(err).NotTo(HaveOccurred())
	// gexec builds into a directory that only its owner may enter.
	dir, err := os.MkdirTemp("", "kubectl-cf-bin-")
	Expect(err).NotTo(HaveOccurred())
	Expect(os.Chmod(dir, 0o755)).To(Succeed())
	binaryDir = dir
	binary := filepath.Join(dir, "kubectl-cf")
	Expect(os.Rename(built, binary)).To(Succeed())
	Expect(os.Chmod(binary, 0o755)).To(Succeed())
	return binary
})

// binaryDir holds the plugin that pluginBinary built; the suite removes it at its end.
var binaryDir string

var _ = AfterSuite(func() {
	gexec.CleanupBuildArtifacts()
	if binaryDir != "" {
		Expect(os.RemoveAll(binaryDir)).To(Succeed())
	}
})
