package v1alpha1_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

func TestRules(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Cloud Foundry rules")
}

var _ = Describe("DisplayNameKey", func() {
	DescribeTable("is the same exactly for names that Cloud Foundry calls the same",
		func(a, b string, same bool) {
			Expect(cfv1alpha1.SameDisplayName(a, b)).To(Equal(same))
			Expect(cfv1alpha1.DisplayNameKey(a) == cfv1alpha1.DisplayNameKey(b)).To(Equal(same))
		},
		Entry("ASCII case", "Dev Space", "dEV sPACE", true),
		Entry("the Kelvin sign folds to k", "\u212aube", "kube", true),
		Entry("the long s folds to S", "\u017fpace", "SPACE", true),
		Entry("the final sigma folds to the capital", "λόγος", "ΛΌΓΟΣ", true),
		Entry("other letters", "dev", "prod", false),
		Entry("a trailing space", "dev", "dev ", false),
		Entry("ß is not ss", "straße", "strasse", false),
	)

	It("is a label value", func() {
		Expect(validation.IsValidLabelValue(cfv1alpha1.DisplayNameKey("Any name, with spaces & symbols ✓"))).To(BeEmpty())
	})
})

var _ = Describe("An app's web process", func() {
	It("is named, labelled and owned by the app, with Cloud Foundry's defaults", func() {
		app := &cfv1alpha1.CFApp{}
		app.Namespace, app.Name, app.UID = "space", "app-guid", "app-uid"
		web := cfv1alpha1.WebProcess(app)
		Expect(web.Name).To(Equal("app-guid-web"))
		Expect(web.Labels).To(Equal(map[string]string{cfv1alpha1.AppLabel: "app-guid", cfv1alpha1.ProcessTypeLabel: "web"}))
		Expect(web.OwnerReferences).To(ConsistOf(And(HaveField("UID", BeEquivalentTo("app-uid")), HaveField("Controller", HaveValue(BeTrue())))))
		Expect(web.Spec).To(Equal(cfv1alpha1.CFProcessSpec{AppRef: web.Spec.AppRef, ProcessType: "web", Instances: 1, MemoryMB: 1024, DiskMB: 1024,
			HealthCheck: cfv1alpha1.HealthCheck{Type: cfv1alpha1.PortHealthCheck, TimeoutSeconds: 60}}))
		Expect(web.Spec.AppRef.Name).To(Equal("app-guid"))
	})

	It("has a name of at most 52 characters for the longest app GUID", func() {
		long := "a23456789-123456789-123456789-123456789-123456789-123456789-123"
		Expect(cfv1alpha1.ProcessName(long, "web")).To(HaveLen(52))
		Expect(cfv1alpha1.ProcessName(long, "web")).NotTo(Equal(cfv1alpha1.ProcessName(long[:62]+"4", "web")))
	})
})
