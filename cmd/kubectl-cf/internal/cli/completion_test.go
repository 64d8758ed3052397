package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/uuid"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
)

var _ = Describe("shell completion", func() {
	var prefix, org string

	BeforeEach(func(ctx SpecContext) {
		// Names no other spec's begin with, so that the completions are exactly these.
		prefix = "cmp" + string(uuid.NewUUID())[:6]
		org = prefix + "-acme"
		createOrg(ctx, org)
		createOrg(ctx, prefix+"-beta")
		dev := createSpace(ctx, org, "dev")
		createSpace(ctx, org, "DevTest")
		createSpace(ctx, org, "prod")
		cftest.CreateApp(ctx, k8s, dev, "web", cfv1alpha1.StoppedState)
		cftest.CreateApp(ctx, k8s, dev, "worker", cfv1alpha1.StoppedState)
	})

	// complete runs cobra's __complete as kubectl_complete-cf does, and returns the
	// completions, without the directive line.
	complete := func(ctx SpecContext, args ...string) []string {
		GinkgoHelper()
		out, err := kubectlCF(ctx, append([]string{"__complete"}, args...)...)
		Expect(err).NotTo(HaveOccurred())
		lines := strings.Split(strings.TrimSpace(out), "\n")
		Expect(lines[len(lines)-1]).To(Equal(":4"), "no file names")
		return lines[:len(lines)-1]
	}

	It("completes org, space and app names, as far as typed and ignoring case", func(ctx SpecContext) {
		Expect(complete(ctx, "create-space", strings.ToUpper(prefix))).To(Equal([]string{prefix + "-acme", prefix + "-beta"}))
		Expect(complete(ctx, "delete-org", prefix+"-a")).To(Equal([]string{org}))
		Expect(complete(ctx, "delete-space", org, "dev")).To(Equal([]string{"dev", "DevTest"}))
		Expect(complete(ctx, "set-registry", org, "p")).To(Equal([]string{"prod"}))
		Expect(complete(ctx, "push", "--org", prefix+"-b")).To(Equal([]string{prefix + "-beta"}))
		Expect(complete(ctx, "apps", "--org", org, "--space", "")).To(Equal([]string{"dev", "DevTest", "prod"}))
		Expect(complete(ctx, "builds", "--org", org, "-s", "dev", "")).To(Equal([]string{"web", "worker"}))
		Expect(complete(ctx, "restage", "-o", org, "-s", "dev", "wo")).To(Equal([]string{"worker"}))
		for _, command := range []string{"start", "stop", "restart", "scale", "logs"} {
			Expect(complete(ctx, command, "-o", org, "-s", "dev", "W")).To(Equal([]string{"web", "worker"}), command)
		}
		Expect(complete(ctx, "app", "--org", org, "-s", "dev", "we")).To(Equal([]string{"web"}))
		Expect(complete(ctx, "push", "-u", "")).To(Equal([]string{"http", "port", "process"}))
		Expect(complete(ctx, "app", "-o", "j")).To(Equal([]string{"json", "jsonpath", "jsonpath-as-json", "jsonpath-file"}))
		Expect(complete(ctx, "set-upgrade-policy", org, "")).To(Equal([]string{"Automatic", "Held"}))
		Expect(complete(ctx, "apps", "-o", "y")).To(Equal([]string{"yaml"}))
	})

	It("reaches kubectl through the kubectl_complete-cf script beside the plugin", func(ctx SpecContext) {
		dir := filepath.Dir(pluginBinary())
		script, err := filepath.Abs("../../kubectl_complete-cf")
		Expect(err).NotTo(HaveOccurred())
		info, err := os.Stat(script)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()&0o111).To(Equal(os.FileMode(0o111)), "executable")

		cmd := exec.CommandContext(ctx, script, "delete-space", "--kubeconfig", kubeconfig, org, "p")
		cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.Output()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(Equal("prod\n:4\n"))
	})
})
