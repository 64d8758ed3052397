package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
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

var _ = Describe("ValidateProcessTypes", func() {
	processes := func(n, commandLength int) []cfv1alpha1.ProcessType {
		list := make([]cfv1alpha1.ProcessType, n)
		for i := range list {
			list[i] = cfv1alpha1.ProcessType{Type: fmt.Sprintf("worker-%d", i), Command: strings.Repeat("x", commandLength)}
		}
		return list
	}
	DescribeTable("bounds a droplet's process list, saying which bound it passes",
		func(list []cfv1alpha1.ProcessType, message string) {
			Expect(cfv1alpha1.ValidateProcessTypes(list)).To(Equal(message))
		},
		Entry("a Procfile's", []cfv1alpha1.ProcessType{{Type: "web", Command: "node server.js"}, {Type: "worker", Command: "node worker.js"}}, ""),
		Entry("none", nil, ""),
		Entry("as many as allowed, each as long as allowed, within the total", processes(cfv1alpha1.MaxProcessTypes, 400), ""),
		Entry("one too many", processes(cfv1alpha1.MaxProcessTypes+1, 1), "the droplet declares 33 process types; at most 32 are allowed"),
		Entry("10,000", processes(10_000, 1), "the droplet declares 10000 process types; at most 32 are allowed"),
		Entry("a long type", []cfv1alpha1.ProcessType{{Type: strings.Repeat("t", 64)}},
			`the droplet's process type "tttttttttttttttttttt"... has 64 characters; at most 63 are allowed`),
		Entry("a command of 20 MB", []cfv1alpha1.ProcessType{{Type: "web", Command: strings.Repeat("x", 20<<20)}},
			`the command of the droplet's process type "web" has 20971520 characters; at most 4096 are allowed`),
		Entry("commands within their bound, beyond the total", processes(5, 4000),
			"the droplet's process types and commands have 20040 bytes together; at most 16384 are allowed"),
	)
})

var _ = Describe("CanonicalTime", func() {
	DescribeTable("is a time in the form the CF API writes it, or nothing",
		func(value, canonical string) {
			Expect(cfv1alpha1.CanonicalTime(value)).To(Equal(canonical))
		},
		Entry("as the CF API writes it", "2026-12-05T11:00:00.5Z", "2026-12-05T11:00:00.5Z"),
		Entry("whole seconds", "2026-12-05T11:00:00Z", "2026-12-05T11:00:00Z"),
		Entry("in another zone", "2026-12-05T12:00:00+01:00", "2026-12-05T11:00:00Z"),
		Entry("nothing", "", ""),
		Entry("not a time", "now", ""),
		Entry("a time and more", "2026-12-05T11:00:00Z and more", ""),
		Entry("a megabyte", strings.Repeat("9", 1<<20), ""),
	)
})

var _ = Describe("CPUShare", func() {
	DescribeTable("is one CPU per 8 GiB of memory, at least a millicore, as config/policies/cpu-shares.yaml gives",
		func(memory, cpu string) {
			share := cfv1alpha1.CPUShare(resource.MustParse(memory))
			Expect(share.String()).To(Equal(cpu))
		},
		Entry("a default instance", "1Gi", "125m"),
		Entry("a build step's request", "128Mi", "15m"),
		Entry("the smallest instance", "16Mi", "1m"),
		Entry("8 GiB", "8Gi", "1"),
		Entry("the largest instance", "64Gi", "8"),
	)
})
