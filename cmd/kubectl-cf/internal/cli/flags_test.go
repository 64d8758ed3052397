package cli_test

import (
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var _ = Describe("kubectl's connection flags", func() {
	It("connects through the context that --context names", func(ctx SpecContext) {
		config, err := clientcmd.LoadFromFile(kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		admin := config.CurrentContext
		// The current context of this kubeconfig points where nothing listens.
		config.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
		config.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: config.Contexts[admin].AuthInfo}
		config.CurrentContext = "nowhere"
		file := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(clientcmd.WriteToFile(*config, file)).To(Succeed())

		_, err = kubectlCF(ctx, "tree", "--kubeconfig", file)
		Expect(err).To(MatchError(ContainSubstring("127.0.0.1:1")))
		out, err := kubectlCF(ctx, "tree", "--kubeconfig", file, "--context", admin)
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)[0]).To(Equal("ORG / SPACE NAMESPACE READY BUILD READY"))
	})

	It("acts as the user and groups that --as and --as-group name", func(ctx SpecContext) {
		_, err := kubectlCF(ctx, "tree", "--as", "jane")
		Expect(err).To(MatchError(`listing orgs: cforgs.workloads.cloudfoundry.org is forbidden: User "jane" cannot list resource "cforgs" in API group "workloads.cloudfoundry.org" in the namespace "cf"`))
		_, err = kubectlCF(ctx, "tree", "--as", "jane", "--as-group", "system:masters")
		Expect(err).NotTo(HaveOccurred())
	})
})
