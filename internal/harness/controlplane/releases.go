package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// HNC and kpack are installed on the node from their releases' manifests, as docs/install.md
// tells an operator to install them: made here from the manifests in their module zips (the
// sources of the release files), with the images the local registry holds.

// hncRelease is HNC's release manifest with config/hnc's changes, its image being image
// (install.BuildHNC).
func (p paths) hncRelease(image string) ([]*unstructured.Unstructured, error) {
	hncDir, err := p.moduleDir(hncModule)
	if err != nil {
		return nil, err
	}
	return install.BuildHNC(filepath.Join(hncDir, "config"), p.config(), image)
}

// kpackValue is the one ytt expression kpack's manifests use besides loading data: a value of
// its data values schema (config/schema.yaml).
var kpackValue = regexp.MustCompile(`#@ data\.values\.([a-z_.]+)\s*$`)

// kpackRelease is kpack v0.18.0's release manifest, made from the ytt templates of its module's
// config directory as kpack's release process makes release.yaml, with values for its data
// values: kpack_version, and the image of each of controller, webhook, build_init, build_waiter,
// rebase, completion and lifecycle. Any other ytt directive fails, rather than being ignored.
func (p paths) kpackRelease(values map[string]string) ([]*unstructured.Unstructured, error) {
	kpackDir, err := p.moduleDir(kpackModule)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(kpackDir, "config", "*.yaml"))
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, file := range files {
		if path.Base(file) == "schema.yaml" {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		rendered, err := renderKpackTemplate(data, values)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		docs, err := decodeObjects(rendered)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		objs = append(objs, docs...)
	}
	return objs, nil
}

// renderKpackTemplate replaces each `#@ data.values.<path>` with its value.
func renderKpackTemplate(data []byte, values map[string]string) ([]byte, error) {
	var out bytes.Buffer
	for line := range strings.Lines(string(data)) {
		trimmed := strings.TrimSpace(line)
		if trimmed == `#@ load("@ytt:data", "data")` {
			continue
		}
		if m := kpackValue.FindStringSubmatchIndex(line); m != nil {
			key := line[m[2]:m[3]]
			value, ok := values[key]
			if !ok {
				return nil, fmt.Errorf("no value for data.values.%s", key)
			}
			line = line[:m[0]] + value + "\n"
		} else if strings.HasPrefix(trimmed, "#@") {
			return nil, fmt.Errorf("a ytt directive this harness cannot render: %s", trimmed)
		}
		out.WriteString(line)
	}
	return out.Bytes(), nil
}

// decodeObjects splits a multi-document YAML manifest into objects.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
