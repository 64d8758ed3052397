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
	DescribeTable("is the same for names that Cloud Foundry calls the same",
		func(a, b string) {
			Expect(cfv1alpha1.SameDisplayName(a, b)).To(BeTrue())
			Expect(cfv1alpha1.DisplayNameKey(a)).To(Equal(cfv1alpha1.DisplayNameKey(b)))
		},
		Entry("ASCII case", "Dev Space", "dEV sPACE"),
		Entry("the Kelvin sign folds to k", "\u212aube", "kube"),
		Entry("the long s folds to S", "\u017fpace", "SPACE"),
		Entry("the final sigma folds to the capital", "λόγος", "ΛΌΓΟΣ"),
	)

	DescribeTable("differs for names that Cloud Foundry tells apart",
		func(a, b string) {
			Expect(cfv1alpha1.SameDisplayName(a, b)).To(BeFalse())
			Expect(cfv1alpha1.DisplayNameKey(a)).NotTo(Equal(cfv1alpha1.DisplayNameKey(b)))
		},
		Entry("other letters", "dev", "prod"),
		Entry("a trailing space", "dev", "dev "),
		Entry("ß is not ss", "straße", "strasse"),
	)

	It("is a label value", func() {
		Expect(validation.IsValidLabelValue(cfv1alpha1.DisplayNameKey("Any name, with spaces & symbols ✓"))).To(BeEmpty())
	})
})
