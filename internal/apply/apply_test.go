package apply

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestApply(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "apply (unit)")
}

var _ = Describe("whether an object already holds an intent", func() {
	have := map[string]any{
		"metadata": map[string]any{"name": "app", "labels": map[string]any{"a": "1", "added-by-someone": "x"}},
		"spec": map[string]any{
			"tag":     "registry.local/org/space/app",
			"builder": map[string]any{"kind": "ClusterBuilder", "name": "cf.default", "apiVersion": "kpack.io/v1alpha2"},
			"env":     []any{map[string]any{"name": "CF_BUILD_GUID", "value": "b1"}},
			"cache":   map[string]any{"volume": map[string]any{"size": "2G"}}, // a webhook's default
			"limit":   int64(10),
		},
	}

	DescribeTable("compares only the fields the intent states",
		func(want map[string]any, holds bool) {
			Expect(contains(have, want)).To(Equal(holds))
		},
		Entry("the same fields, others' additions ignored", map[string]any{
			"metadata": map[string]any{"name": "app", "labels": map[string]any{"a": "1"}},
			"spec": map[string]any{"tag": "registry.local/org/space/app", "limit": int64(10),
				"builder": map[string]any{"kind": "ClusterBuilder", "name": "cf.default"},
				"env":     []any{map[string]any{"name": "CF_BUILD_GUID", "value": "b1"}}},
		}, true),
		Entry("a changed value", map[string]any{"spec": map[string]any{"tag": "registry.local/org/space/other"}}, false),
		Entry("a changed item of a list", map[string]any{"spec": map[string]any{"env": []any{map[string]any{"name": "CF_BUILD_GUID", "value": "b2"}}}}, false),
		Entry("a list with another length", map[string]any{"spec": map[string]any{"env": []any{}}}, false),
		Entry("a field the object lacks", map[string]any{"spec": map[string]any{"serviceAccountName": "build"}}, false),
		Entry("a map where the object has a value", map[string]any{"spec": map[string]any{"tag": map[string]any{}}}, false),
	)
})
