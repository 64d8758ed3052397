package registry

import (
	"archive/tar"
	"bytes"
	"code.cloudfoundry.org/cf-hnc/internal/cnb"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The synthetic images are built here, without a registry: pure functions of their inputs,
// so that the same inputs always give the same digests and an upgrade always gives new ones.
//
// They carry what kpack v0.18 reads (pkg/cnb: remote_stack_reader.go,
// remote_lifecycle_reader.go, remote_store_reader.go, create_builder.go, builder_builder.go):
//   - stack: the label io.buildpacks.stack.id on the build and the run image, equal to the
//     ClusterStack's id; CNB_USER_ID and CNB_GROUP_ID in the build image's environment, as
//     integers. io.buildpacks.stack.mixins is optional and left out.
//   - lifecycle: the labels io.buildpacks.builder.metadata (lifecycle.version) and
//     io.buildpacks.lifecycle.apis; the lifecycle itself in the image's last layer; the same
//     os and architecture as the build image. A Builder needs a platform API that kpack
//     supports (0.3-0.8 to create it, 0.7-0.9 for build pods) and every buildpack's API among
//     the lifecycle's buildpack APIs.
//   - buildpackage: io.buildpacks.buildpack.layers maps id -> version -> {api, stacks,
//     layerDiffID}, and layerDiffID must name one of the image's layers;
//     io.buildpacks.buildpackage.metadata is optional for kpack but written, as pack does.
//
// No build runs these images' programs (the local control plane has no kubelet), so the
// lifecycle and the buildpacks are shell scripts that only say what they are.

const (
	// stackID is the id of the seeded stack.
	stackID = "io.buildpacks.stacks.jammy"
	// cnbUserID and cnbGroupID own the build's files; kpack copies them into the builder.
	cnbUserID  = 1000
	cnbGroupID = 1000

	buildpackAPI = "0.10"
)

var (
	// The APIs of lifecycle 0.20, less those deprecated there.
	lifecycleBuildpackAPIs = []string{"0.7", "0.8", "0.9", "0.10", "0.11"}
	lifecyclePlatformAPIs  = []string{"0.7", "0.8", "0.9", "0.10", "0.11", "0.12", "0.13"}

	// lifecyclePhases are the lifecycle's programs, links to its one binary.
	lifecyclePhases = []string{"analyzer", "builder", "creator", "detector", "exporter", "extender", "rebaser", "restorer"}

	// fileTime is the fixed modification time of every file, as pack and kpack use it.
	fileTime = time.Date(1980, time.January, 1, 0, 0, 1, 0, time.UTC)
)

// stackImage is the build image (build true) or run image of the stack with id; patch is the
// level of its base layer, raised for every fixed run image.
func stackImage(id string, build bool, patch int) (v1.Image, error) {
	base, err := tarLayer(
		dir("etc", 0),
		file("etc/os-release", 0o644, fmt.Sprintf("NAME=\"Synthetic %s\"\nID=ubuntu\nPATCH_LEVEL=%d\n", id, patch)),
		file("etc/passwd", 0o644, fmt.Sprintf("root:x:0:0:root:/root:/bin/sh\ncnb:x:%d:%d::/home/cnb:/bin/sh\n", cnbUserID, cnbGroupID)),
		file("etc/group", 0o644, fmt.Sprintf("root:x:0:\ncnb:x:%d:\n", cnbGroupID)),
		dir("home", 0),
		dir("home/cnb", cnbUserID),
	)
	if err != nil {
		return nil, err
	}
	role := "run"
	if build {
		role = "build"
	}
	packages, err := tarLayer(file("etc/synthetic-"+role+"-packages", 0o644, "ca-certificates\ntzdata\n"))
	if err != nil {
		return nil, err
	}
	return newImage([]v1.Layer{base, packages}, func(c *v1.Config) {
		c.User = fmt.Sprintf("%d:%d", cnbUserID, cnbGroupID)
		c.Env = append(c.Env,
			"CNB_USER_ID="+strconv.Itoa(cnbUserID),
			"CNB_GROUP_ID="+strconv.Itoa(cnbGroupID),
			"CNB_STACK_ID="+id,
		)
		c.Labels[cnb.StackIDLabel] = id
	})
}

// lifecycleImage is a lifecycle of the given version.
func lifecycleImage(version string) (v1.Image, error) {
	entries := []tarEntry{
		dir("cnb", 0),
		dir("cnb/lifecycle", 0),
		file("cnb/lifecycle/lifecycle", 0o755, fmt.Sprintf(
			"#!/bin/sh\necho \"synthetic lifecycle %s cannot run $(basename \"$0\")\" >&2\nexit 1\n", version)),
		file("cnb/lifecycle/lifecycle.toml", 0o644, fmt.Sprintf("[lifecycle]\n  version = %q\n", version)),
		symlink("cnb/lifecycle/launcher", "lifecycle"),
	}
	for _, phase := range lifecyclePhases {
		entries = append(entries, symlink("cnb/lifecycle/"+phase, "lifecycle"))
	}
	// kpack puts only the last layer into builders, so the lifecycle must be that layer.
	lifecycle, err := tarLayer(entries...)
	if err != nil {
		return nil, err
	}
	metadata, err := jsonLabels(map[string]any{
		cnb.BuilderMetadataLabel: lifecycleDescriptor{
			Lifecycle: lifecycleInfo{Version: version},
			// The single API versions that lifecycle images still carry for old platforms.
			API: lifecycleAPI{Buildpack: "0.2", Platform: "0.3"},
		},
		cnb.LifecycleAPIsLabel: lifecycleAPIs{
			Buildpack: apiVersions{Deprecated: []string{}, Supported: lifecycleBuildpackAPIs},
			Platform:  apiVersions{Deprecated: []string{}, Supported: lifecyclePlatformAPIs},
		},
	})
	if err != nil {
		return nil, err
	}
	return newImage([]v1.Layer{lifecycle}, func(c *v1.Config) {
		for k, v := range metadata {
			c.Labels[k] = v
		}
		c.Labels[cnb.LifecycleVersionLabel] = version
	})
}

// detectFiles are the files at an app's root that the seeded buildpacks detect, as their
// Paketo namesakes do; a buildpack not listed detects every app. The stand-in kubelet reads
// them from the buildpack's detect-files (standinkubelet.DetectFilesName), as bin/detect does.
var detectFiles = map[string][]string{
	"paketo-buildpacks/go":       {"go.mod", "*.go"},
	"paketo-buildpacks/java":     {"pom.xml", "build.gradle", "*.jar"},
	"paketo-buildpacks/nodejs":   {"package.json"},
	"paketo-buildpacks/procfile": {"Procfile"},
}

// detectScript is a buildpack's bin/detect: it passes (exit 0) for an app with a file that
// matches a pattern of detect-files at its root, and fails (exit 100) otherwise, as buildpack
// API 0.10 says.
const detectScript = `#!/bin/sh
patterns="$(dirname "$0")/../detect-files"
[ -f "$patterns" ] || exit 0
while read -r pattern; do
  for f in $pattern; do [ -e "$f" ] && exit 0; done
done < "$patterns"
exit 100
`

// buildpackageImage is a buildpackage that holds one buildpack.
func buildpackageImage(id, version string) (v1.Image, error) {
	bpDir := path.Join("cnb/buildpacks", strings.ReplaceAll(id, "/", "_"), version)
	entries := []tarEntry{
		dir("cnb", 0),
		dir("cnb/buildpacks", 0),
		dir(path.Dir(bpDir), 0),
		dir(bpDir, 0),
		file(bpDir+"/buildpack.toml", 0o644, fmt.Sprintf(
			"api = %q\n\n[buildpack]\n  id = %q\n  version = %q\n  name = %q\n\n[[stacks]]\n  id = \"*\"\n",
			buildpackAPI, id, version, "Synthetic "+id)),
		dir(bpDir+"/bin", 0),
		file(bpDir+"/bin/detect", 0o755, detectScript),
		file(bpDir+"/bin/build", 0o755, fmt.Sprintf("#!/bin/sh\necho \"synthetic buildpack %s %s\"\n", id, version)),
	}
	if patterns, ok := detectFiles[id]; ok {
		entries = append(entries, file(bpDir+"/detect-files", 0o644, strings.Join(patterns, "\n")+"\n"))
	}
	layer, err := tarLayer(entries...)
	if err != nil {
		return nil, err
	}
	diffID, err := layer.DiffID()
	if err != nil {
		return nil, err
	}
	// Stack "*": any stack, as buildpack API 0.5 and later allow.
	anyStack := []buildpackStack{{ID: "*"}}
	labels, err := jsonLabels(map[string]any{
		cnb.BuildpackLayersLabel: map[string]map[string]buildpackLayerInfo{
			id: {version: {API: buildpackAPI, Stacks: anyStack, LayerDiffID: diffID.String()}},
		},
		cnb.BuildpackageMetadataLabel: buildpackageMetadata{ID: id, Version: version, Stacks: anyStack},
	})
	if err != nil {
		return nil, err
	}
	return newImage([]v1.Layer{layer}, func(c *v1.Config) {
		for k, v := range labels {
			c.Labels[k] = v
		}
	})
}

// Label contents, with the JSON names that kpack and the lifecycle use.
type (
	lifecycleDescriptor struct {
		Lifecycle lifecycleInfo `json:"lifecycle"`
		API       lifecycleAPI  `json:"api"`
	}
	lifecycleInfo struct {
		Version string `json:"version"`
	}
	lifecycleAPI struct {
		Buildpack string `json:"buildpack"`
		Platform  string `json:"platform"`
	}
	lifecycleAPIs struct {
		Buildpack apiVersions `json:"buildpack"`
		Platform  apiVersions `json:"platform"`
	}
	apiVersions struct {
		Deprecated []string `json:"deprecated"`
		Supported  []string `json:"supported"`
	}
	buildpackStack struct {
		ID string `json:"id"`
	}
	buildpackLayerInfo struct {
		API         string           `json:"api"`
		Stacks      []buildpackStack `json:"stacks,omitempty"`
		LayerDiffID string           `json:"layerDiffID"`
	}
	buildpackageMetadata struct {
		ID      string           `json:"id"`
		Version string           `json:"version"`
		Stacks  []buildpackStack `json:"stacks,omitempty"`
	}
)

func jsonLabels(values map[string]any) (map[string]string, error) {
	labels := make(map[string]string, len(values))
	for k, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("label %s: %w", k, err)
		}
		labels[k] = string(b)
	}
	return labels, nil
}

// newImage is a linux/amd64 image of layers, its config changed by configure.
func newImage(layers []v1.Layer, configure func(*v1.Config)) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS = "linux"
	cfg.Architecture = "amd64"
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cfg.Config.Labels = map[string]string{}
	configure(&cfg.Config)
	return mutate.ConfigFile(img, cfg)
}

// tarEntry is a file, directory or symbolic link of a layer.
type tarEntry struct {
	header tar.Header
	body   string
}

func dir(name string, owner int) tarEntry {
	return tarEntry{header: tar.Header{Typeflag: tar.TypeDir, Name: "/" + name, Mode: 0o755, Uid: owner, Gid: owner}}
}

func file(name string, mode int64, body string) tarEntry {
	return tarEntry{header: tar.Header{Typeflag: tar.TypeReg, Name: "/" + name, Mode: mode, Size: int64(len(body))}, body: body}
}

func symlink(name, target string) tarEntry {
	return tarEntry{header: tar.Header{Typeflag: tar.TypeSymlink, Name: "/" + name, Linkname: target, Mode: 0o777}}
}

// tarLayer is a gzip-compressed layer of entries, in their order.
func tarLayer(entries ...tarEntry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.header
		h.ModTime = fileTime
		if err := tw.WriteHeader(&h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", h.Name, err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", h.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	content := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(content)), nil
	})
}
