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

var _ = Describe("ValidateNamespaceGUID", func() {
	DescribeTable("accepts exactly the lowercase UUIDs, and says what one looks like",
		func(name string, valid bool) {
			message := cfv1alpha1.ValidateNamespaceGUID(name)
			if valid {
				Expect(message).To(BeEmpty())
				return
			}
			Expect(message).To(ContainSubstring("a lowercase UUID (8-4-4-4-12 hexadecimal digits) such as 4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10"))
		},
		Entry("a UUID, the one the message gives as an example", "4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10", true),
		Entry("a well-known namespace", "istio-system", false),
		Entry("a DNS label", "acme", false),
		Entry("upper case", "4C46D7E1-0F7B-4A5E-9D2A-5C1F8E3B9A10", false),
		Entry("no hyphens", "4c46d7e10f7b4a5e9d2a5c1f8e3b9a10", false),
		Entry("a digit too many", "4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a100", false),
		Entry("a trailing newline", "4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10\n", false),
		Entry("not hexadecimal", "4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a1g", false),
	)
})

var _ = Describe("EnclosingRepository", func() {
	placed := []string{"registry.local/org/", "registry.local/cf"}
	DescribeTable("names the repository placed above that a space's repository lies within",
		func(repository, enclosing string) {
			Expect(cfv1alpha1.EnclosingRepository(repository, placed)).To(Equal(enclosing))
		},
		Entry("the org's itself", "registry.local/org", "registry.local/org"),
		Entry("a space's path below the org's", "registry.local/org/space/team", "registry.local/org"),
		Entry("below the root's", "registry.local/cf/other-org/space", "registry.local/cf"),
		Entry("a repository whose name only starts like the org's", "registry.local/organic", ""),
		Entry("another path on the same registry", "registry.local/isolated/space", ""),
		Entry("another registry", "own.registry/org", ""),
	)
})

var _ = Describe("SameImage", func() {
	// The CF API's droplet stack compared only references with digests; the droplet decisions
	// compared the references themselves when they have none. One rule, the second: a
	// reference names one image by its digest, or else by itself.
	DescribeTable("compares images by digest, whatever repository names them",
		func(a, b string, same bool) {
			Expect(cfv1alpha1.SameImage(a, b)).To(Equal(same))
		},
		Entry("one digest, two repositories", "registry.local/stacks/run@sha256:r1", "registry.local/builders/web/run@sha256:r1", true),
		Entry("two digests", "registry.local/run@sha256:r1", "registry.local/run@sha256:r2", false),
		Entry("the same reference without a digest", "registry.local/run:jammy", "registry.local/run:jammy", true),
		Entry("a digest and a tag", "registry.local/run@sha256:r1", "registry.local/run:jammy", false),
		Entry("nothing", "", "", false),
	)
})
