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
