package controlplane

import (
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

var _ = Describe("the cf-hnc manager on the local control plane", func() {
	var objs []*unstructured.Unstructured

	BeforeEach(func() {
		p, err := findPaths(Options{})
		Expect(err).NotTo(HaveOccurred())
		objs, err = install.Build(p.config(), install.Default, "")
		Expect(err).NotTo(HaveOccurred())
	})

	It("runs with every flag of the Deployment, changing only the out-of-cluster ones", func() {
		container, err := install.ManagerContainerOf(objs)
		Expect(err).NotTo(HaveOccurred())
		local := map[string]string{}
		for _, name := range outOfClusterFlags {
			local[name] = "local-" + name
		}
		args, err := install.OverrideArgs(container.Args, local, outOfClusterFlags)
		Expect(err).NotTo(HaveOccurred())

		deployed := map[string]string{}
		for _, arg := range container.Args {
			name, value, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
			deployed[name] = value
		}
		for _, arg := range args {
			name, value, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
			if slices.Contains(outOfClusterFlags, name) {
				Expect(value).To(Equal("local-"+name), "--%s is set for out of cluster", name)
				continue
			}
			Expect(deployed).To(HaveKeyWithValue(name, value), "--%s is the Deployment's", name)
			delete(deployed, name)
		}
		for name := range deployed {
			Expect(outOfClusterFlags).To(ContainElement(name), "the Deployment's --%s is passed on", name)
		}
		Expect(deployed).NotTo(HaveKey("leader-elect"))
	})

	It("has its webhooks called at a local URL, with the path of their Service reference", func() {
		var config *unstructured.Unstructured
		for _, obj := range objs {
			if obj.GetKind() == "ValidatingWebhookConfiguration" {
				config = obj
			}
		}
		Expect(config).NotTo(BeNil())
		before, _, _ := unstructured.NestedSlice(config.Object, "webhooks")

		local, err := localWebhooks(config, "https://localhost:4321")
		Expect(err).NotTo(HaveOccurred())
		hooks, _, _ := unstructured.NestedSlice(local.Object, "webhooks")
		Expect(hooks).To(HaveLen(len(before)))
		for i, h := range hooks {
			path, _, _ := unstructured.NestedString(before[i].(map[string]any), "clientConfig", "service", "path")
			clientConfig, _, _ := unstructured.NestedMap(h.(map[string]any), "clientConfig")
			Expect(clientConfig).To(Equal(map[string]any{"url": "https://localhost:4321" + path}))
		}
		after, _, _ := unstructured.NestedSlice(config.Object, "webhooks")
		Expect(after).To(Equal(before), "the built object is not changed")
	})

	It("refuses a webhook without a Service path, rather than calling the wrong URL", func() {
		config := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "hooks"},
			"webhooks": []any{map[string]any{"name": "v.example.org", "clientConfig": map[string]any{"url": "https://elsewhere"}}}}}
		_, err := localWebhooks(config, "https://localhost:1")
		Expect(err).To(MatchError(ContainSubstring("v.example.org has no clientConfig.service.path")))
	})
})
