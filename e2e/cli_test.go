package e2e_test

import (
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/uuid"
)

var _ = Describe("The operator's flow with kubectl cf and kubectl hns", func() {
	var kubectlCF, kubectlHNS string

	BeforeEach(func() {
		var err error
		kubectlCF = pluginBinary()
		kubectlHNS, err = filepath.Abs("../bin/kubectl-hns")
		Expect(err).NotTo(HaveOccurred())
	})

	run := func(binary string, args ...string) string {
		GinkgoHelper()
		out, err := exec.Command(binary, append(args, "--kubeconfig", cp.Kubeconfig)...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s %v:\n%s", filepath.Base(binary), args, out)
		return string(out)
	}

	It("creates an org and its spaces, places the registry once, and both trees show them", func() {
		name, org := "acme-"+string(uuid.NewUUID())[:8], string(uuid.NewUUID())
		Expect(run(kubectlCF, "create-org", name, "--guid", org)).To(ContainSubstring(`org %q is ready: namespace %s`, name, org))
		dev := string(uuid.NewUUID())
		Expect(run(kubectlCF, "create-space", name, "dev", "--guid", dev)).To(ContainSubstring(`space "dev" in org %q is ready`, name))

		registryUser(org)
		user, password := registryCredentials(org)
		host := cp.Kpack().Registry.Host()
		Expect(run(kubectlCF, "set-registry", name, "--server", host, "--username", user, "--password", password,
			"--droplet-repository", host+"/"+org)).To(MatchRegexp(`(?m)^%s\s+dev\s+%s\s+True\s*$`, name, dev))

		By("a space created later: it can build once HNC has copied the org's and root's objects")
		staging := string(uuid.NewUUID())
		Expect(run(kubectlCF, "create-space", name, "staging", "--guid", staging)).To(ContainSubstring(`space "staging" in org %q is ready`, name))

		Expect(run(kubectlHNS, "tree", root)).To(And(
			ContainSubstring("[s] "+org),
			ContainSubstring("[s] "+dev),
			ContainSubstring("[s] "+staging)))
		Eventually(func() string { return run(kubectlCF, "tree") }).Should(And(
			MatchRegexp(`(?m)^%s\s+%s\s+True\s*$`, name, org),
			MatchRegexp(`(?m)^├── dev\s+%s\s+True\s+True\s*$`, dev),
			MatchRegexp(`(?m)^└── staging\s+%s\s+True\s+True\s*$`, staging)))
	})
})
