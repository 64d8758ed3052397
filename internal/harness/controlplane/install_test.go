package controlplane

import (
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

var _ = Describe("HNC's and kpack's releases, as the node installs them", func() {
	var p paths

	BeforeEach(func() {
		var err error
		p, err = findPaths(Options{})
		Expect(err).NotTo(HaveOccurred())
	})

	deploymentIn := func(objs []*unstructured.Unstructured, namespace, name string) *appsv1.Deployment {
		GinkgoHelper()
		for _, obj := range objs {
			if obj.GetKind() == "Deployment" && obj.GetNamespace() == namespace && obj.GetName() == name {
				d := &appsv1.Deployment{}
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, d)).To(Succeed())
				return d
			}
		}
		Fail("no Deployment " + namespace + "/" + name)
		return nil
	}

	It("runs HNC's release with config/hnc's flags and the local image", func() {
		objs, err := p.hncRelease("10.213.1.1:5000/cnb/hnc/manager@sha256:0123")
		Expect(err).NotTo(HaveOccurred())
		manager := deploymentIn(objs, hncDeployment.namespace, hncDeployment.name).Spec.Template.Spec.Containers[0]
		Expect(manager.Image).To(Equal("10.213.1.1:5000/cnb/hnc/manager@sha256:0123"))
		expected, err := p.hncArgs()
		Expect(err).NotTo(HaveOccurred())
		Expect(manager.Args).To(ContainElements(expected), "config/hnc/manager-args.yaml")
		Expect(manager.Args).To(ContainElements("--enable-internal-cert-management", "--cert-restart-on-secret-refresh"))
		var objects *unstructured.Unstructured
		for _, obj := range objs {
			if obj.GetKind() == "ValidatingWebhookConfiguration" {
				objects = obj
			}
		}
		Expect(objects).NotTo(BeNil())
		hooks, _, _ := unstructured.NestedSlice(objects.Object, "webhooks")
		Expect(hooks).To(ContainElement(HaveKeyWithValue("name", "objects.hnc.x-k8s.io")))
		for _, h := range hooks {
			hook := h.(map[string]any)
			if hook["name"] == "objects.hnc.x-k8s.io" {
				rules, _, _ := unstructured.NestedSlice(hook, "rules")
				Expect(rules).NotTo(ContainElement(HaveKeyWithValue("resources", ContainElement("*"))),
					"config/hnc narrows the object webhook to the kinds HNC propagates")
			}
		}
	})

	It("renders kpack's release with every value its templates ask for", func() {
		values := map[string]string{"kpack_version": "v0.18.0"}
		for _, image := range []string{"controller", "webhook", "build_init", "build_waiter", "rebase", "completion", "lifecycle"} {
			values[image+".image"] = "10.213.1.1:5000/cnb/kpack/" + image + "@sha256:0123"
		}
		objs, err := p.kpackRelease(values)
		Expect(err).NotTo(HaveOccurred())
		controller := deploymentIn(objs, kpackController.namespace, kpackController.name)
		Expect(controller.Spec.Template.Spec.Containers[0].Image).To(Equal(values["controller.image"]))
		Expect(controller.Spec.Template.Labels).To(HaveKeyWithValue("version", "v0.18.0"))
		Expect(deploymentIn(objs, kpackWebhook.namespace, kpackWebhook.name).Spec.Template.Spec.Containers[0].Image).
			To(Equal(values["webhook.image"]))
		var rebase *corev1.ConfigMap
		for _, obj := range objs {
			if obj.GetKind() == "ConfigMap" && obj.GetName() == "rebase-image" {
				rebase = &corev1.ConfigMap{}
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, rebase)).To(Succeed())
			}
		}
		Expect(rebase).NotTo(BeNil())
		Expect(rebase.Data).To(HaveKeyWithValue("image", values["rebase.image"]))
		Expect(slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "CustomResourceDefinition" })).
			To(BeTrue(), "the release installs kpack's CRDs")

		delete(values, "rebase.image")
		_, err = p.kpackRelease(values)
		Expect(err).To(MatchError(ContainSubstring("no value for data.values.rebase.image")))
	})

	It("refuses a ytt directive it cannot render, rather than dropping it", func() {
		_, err := renderKpackTemplate([]byte("#@ load(\"@ytt:data\", \"data\")\n#@ if data.values.x:\nkind: ConfigMap\n"), nil)
		Expect(err).To(MatchError(ContainSubstring("#@ if data.values.x:")))
		out, err := renderKpackTemplate([]byte("data:\n  image: #@ data.values.rebase.image\n"), map[string]string{"rebase.image": "r@sha256:1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(Equal("data:\n  image: r@sha256:1\n"))
	})
})
