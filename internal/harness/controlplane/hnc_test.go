package controlplane

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"
	"sigs.k8s.io/yaml"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

var _ = Describe("HNC's flags in config/hnc", func() {
	var p paths

	BeforeEach(func() {
		var err error
		p, err = findPaths(Options{})
		Expect(err).NotTo(HaveOccurred())
	})

	argsOf := func(deployment *appsv1.Deployment) []string {
		GinkgoHelper()
		Expect(deployment.Spec.Template.Spec.Containers).To(HaveLen(1))
		return deployment.Spec.Template.Spec.Containers[0].Args
	}

	It("keep every flag of the Deployment of HNC's release manifest, whose args the patch replaces", func() {
		hncDir, err := p.moduleDir(hncModule)
		Expect(err).NotTo(HaveOccurred())
		// HNC's release manifest default.yaml is this variant, built with its image.
		objs, err := install.Build(filepath.Join(hncDir, "config"), "variants/default-cc", "")
		Expect(err).NotTo(HaveOccurred())
		release := &appsv1.Deployment{}
		for _, obj := range objs {
			if obj.GetKind() == "Deployment" {
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, release)).To(Succeed())
			}
		}
		Expect(release.Name).To(Equal("hnc-controller-manager"))

		data, err := os.ReadFile(p.config("hnc", "manager-args.yaml"))
		Expect(err).NotTo(HaveOccurred())
		patch := &appsv1.Deployment{}
		Expect(yaml.UnmarshalStrict(data, patch)).To(Succeed())
		Expect(patch.Name).To(Equal(release.Name))
		Expect(argsOf(patch)).To(ContainElements(argsOf(release)))
	})

	It("run on the local control plane without the flags for its addresses and its own webhook certificate", func() {
		args, err := p.hncArgs()
		Expect(err).NotTo(HaveOccurred())
		data, err := os.ReadFile(p.config("hnc", "manager-args.yaml"))
		Expect(err).NotTo(HaveOccurred())
		patch := &appsv1.Deployment{}
		Expect(yaml.UnmarshalStrict(data, patch)).To(Succeed())
		for _, arg := range argsOf(patch) {
			if strings.HasPrefix(arg, "--webhook-server-port=") || strings.HasPrefix(arg, "--metrics-addr=") ||
				arg == "--enable-internal-cert-management" || arg == "--cert-restart-on-secret-refresh" {
				Expect(args).NotTo(ContainElement(arg))
			} else {
				Expect(args).To(ContainElement(arg))
			}
		}
	})
})

var _ = Describe("HNC's object webhook as config/hnc narrows it", func() {
	const objectWebhook = "objects.hnc.x-k8s.io"
	var p paths

	BeforeEach(func() {
		var err error
		p, err = findPaths(Options{})
		Expect(err).NotTo(HaveOccurred())
	})

	// hncWebhooks builds HNC's validating webhook configuration as the control plane registers it.
	hncWebhooks := func(patched bool) *admissionv1.ValidatingWebhookConfiguration {
		GinkgoHelper()
		hncDir, err := p.moduleDir(hncModule)
		Expect(err).NotTo(HaveOccurred())
		webhooks, err := prepareWebhooks(filepath.Join(hncDir, "config"), "webhook", "hnc-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(webhooks.Cleanup()).To(Succeed()) })
		if patched {
			Expect(p.patchHNCWebhooks(webhooks)).To(Succeed())
		}
		Expect(webhooks.ValidatingWebhooks).To(HaveLen(1))
		return webhooks.ValidatingWebhooks[0]
	}
	webhookNamed := func(config *admissionv1.ValidatingWebhookConfiguration, name string) admissionv1.ValidatingWebhook {
		GinkgoHelper()
		for _, hook := range config.Webhooks {
			if hook.Name == name {
				return hook
			}
		}
		Fail("no webhook " + name + " in " + config.Name)
		return admissionv1.ValidatingWebhook{}
	}

	It("is called for exactly the kinds that HNC propagates: those of the HNCConfiguration, Roles and RoleBindings", func() {
		data, err := os.ReadFile(p.config("hnc", "hncconfiguration.yaml"))
		Expect(err).NotTo(HaveOccurred())
		config := &hncv1alpha2.HNCConfiguration{}
		Expect(yaml.UnmarshalStrict(data, config)).To(Succeed())
		propagated := []schema.GroupResource{
			{Group: rbacv1.GroupName, Resource: "roles"},
			{Group: rbacv1.GroupName, Resource: "rolebindings"},
		}
		for _, r := range config.Spec.Resources {
			Expect(r.Mode).To(BeElementOf(hncv1alpha2.Propagate, hncv1alpha2.AllowPropagate),
				"a resource in another mode is not propagated: HNC's webhook allows it without looking")
			propagated = append(propagated, schema.GroupResource{Group: r.Group, Resource: r.Resource})
		}

		var called []schema.GroupResource
		for _, rule := range webhookNamed(hncWebhooks(true), objectWebhook).Rules {
			Expect(rule.Operations).To(ConsistOf(admissionv1.Create, admissionv1.Update, admissionv1.Delete))
			Expect(rule.Scope).To(HaveValue(Equal(admissionv1.NamespacedScope)))
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					called = append(called, schema.GroupResource{Group: group, Resource: resource})
				}
			}
		}
		Expect(called).To(ConsistOf(propagated))
	})

	It("changes nothing else of HNC's webhooks: where they are served, whom they spare, that they fail closed", func() {
		shipped, narrowed := hncWebhooks(false), hncWebhooks(true)
		Expect(webhookNamed(shipped, objectWebhook).Rules).To(ConsistOf(HaveField("Resources", ConsistOf("*"))),
			"HNC ships the object webhook for every namespaced kind")
		Expect(narrowed.Webhooks).To(HaveLen(len(shipped.Webhooks)))
		for _, want := range shipped.Webhooks {
			got := webhookNamed(narrowed, want.Name)
			if want.Name == objectWebhook {
				Expect(got.FailurePolicy).To(HaveValue(Equal(admissionv1.Fail)))
				got.Rules = want.Rules
			}
			// Each build has its own serving certificate; the rest must be the same.
			got.ClientConfig.CABundle = want.ClientConfig.CABundle
			got.ClientConfig.URL = want.ClientConfig.URL
			Expect(got).To(Equal(want), "webhook %s", want.Name)
		}
	})
})
