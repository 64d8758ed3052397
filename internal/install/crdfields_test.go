package install_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// The v1alpha1 CRDs are served and stored: an upgrade that removes a field from them (or
// changes its type) loses what objects hold there and breaks clients that set it. The
// baseline, config/crd/v1alpha1-fields.txt, lists every field path with its type; the check
// fails when one is missing from the current CRDs. Adding fields is compatible; record them
// with `make crd-baseline`, which only ever adds to the baseline.
var _ = Describe("the v1alpha1 CRDs", func() {
	baseline := filepath.Join(configDir(), "crd", "v1alpha1-fields.txt")

	It("keep every field of the baseline, with its type", func() {
		current := currentFields()
		if os.Getenv("CF_HNC_UPDATE_CRD_BASELINE") != "" {
			Expect(writeBaseline(baseline, current)).To(Succeed())
		}
		data, err := os.ReadFile(baseline)
		Expect(err).NotTo(HaveOccurred(), "run `make crd-baseline` to record the CRDs' fields")
		var removed []string
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") && !slices.Contains(current, line) {
				removed = append(removed, line)
			}
		}
		Expect(removed).To(BeEmpty(), "fields removed from (or retyped in) a served v1alpha1 CRD: keep them, "+
			"or serve a new version with a conversion; do not edit the baseline to drop them")
	})

	It("finds a removed or retyped field", func() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		crd.Spec.Names.Plural, crd.Spec.Group = "things", "example.org"
		crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Schema: &apiextensionsv1.CustomResourceValidation{
			OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"names": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
					"env":   {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
				}},
			}},
		}}}
		Expect(crdFields(crd)).To(Equal([]string{
			"things.example.org v1alpha1 .spec object",
			"things.example.org v1alpha1 .spec.env object",
			"things.example.org v1alpha1 .spec.env{} string",
			"things.example.org v1alpha1 .spec.names array",
			"things.example.org v1alpha1 .spec.names[] string",
		}))
	})
})

// currentFields are the field paths of the CRDs that config/default installs.
func currentFields() []string {
	GinkgoHelper()
	objs, err := install.Build(configDir(), "crd", "")
	Expect(err).NotTo(HaveOccurred())
	var fields []string
	for _, obj := range objs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd)).To(Succeed())
		fields = append(fields, crdFields(crd)...)
	}
	sort.Strings(fields)
	return fields
}

// crdFields lists "<crd> <version> <path> <type>" for every field of its v1alpha1 schema.
func crdFields(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var fields []string
	for _, v := range crd.Spec.Versions {
		if v.Name != "v1alpha1" || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		prefix := crd.Spec.Names.Plural + "." + crd.Spec.Group + " " + v.Name + " "
		var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
		walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
			if path != "" {
				fields = append(fields, fmt.Sprintf("%s%s %s", prefix, path, s.Type))
			}
			for name, prop := range s.Properties {
				walk(path+"."+name, &prop)
			}
			if s.Items != nil && s.Items.Schema != nil {
				walk(path+"[]", s.Items.Schema)
			}
			if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				walk(path+"{}", s.AdditionalProperties.Schema)
			}
		}
		walk("", v.Schema.OpenAPIV3Schema)
	}
	sort.Strings(fields)
	return fields
}

// writeBaseline adds the current fields to the baseline; it never removes one.
func writeBaseline(path string, current []string) error {
	lines := slices.Clone(current)
	if data, err := os.ReadFile(path); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				lines = append(lines, line)
			}
		}
	}
	sort.Strings(lines)
	lines = slices.Compact(lines)
	header := "# Every field of cf-hnc's served v1alpha1 CRDs: <crd> <version> <path> <type>. An upgrade may\n" +
		"# add fields but never remove or retype one (internal/install checks it in `make test`).\n" +
		"# `make crd-baseline` adds new fields here; never delete a line.\n"
	return os.WriteFile(path, []byte(header+strings.Join(lines, "\n")+"\n"), 0o644)
}
