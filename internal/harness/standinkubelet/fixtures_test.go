package standinkubelet

import (
	"archive/tar"
	"bytes"
	"code.cloudfoundry.org/cf-hnc/internal/cnb"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	kpackcorev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	testStack            = "io.cf.test.stack"
	testLifecycleVersion = "0.20.12"
)

// layerOf is a layer with the given regular files, in a fixed order.
func layerOf(files map[string]string) v1.Layer {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		Expect(tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[name]))})).To(Succeed())
		_, err := tw.Write([]byte(files[name]))
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(tw.Close()).To(Succeed())
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	})
	Expect(err).NotTo(HaveOccurred())
	return layer
}

func imageOf(labels map[string]string, layers ...v1.Layer) v1.Image {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	Expect(err).NotTo(HaveOccurred())
	img, err = mutate.Config(img, v1.Config{Labels: labels, Env: []string{"PATH=/usr/bin"}})
	Expect(err).NotTo(HaveOccurred())
	return img
}

// runImageFixture is a run image of the test stack; version tells two of them apart.
func runImageFixture(stack, version string) v1.Image {
	return imageOf(
		map[string]string{cnb.StackIDLabel: stack, cnb.StackLabelPrefix + "version": version},
		layerOf(map[string]string{"etc/os-release": "base"}),
		layerOf(map[string]string{"etc/stack-version": version}),
	)
}

// builderFixture is a builder image as kpack writes its labels, with the buildpacks' layers:
// a group with a Go buildpack (detecting go.mod or *.go), then a group with a composite
// buildpack, whose own order names two buildpacks that detect every app, and an optional
// Procfile buildpack (detecting a Procfile).
func builderFixture(runImage string) v1.Image {
	type buildpack struct{ id, version, detect string }
	layers := map[string]v1.Layer{}
	for _, bp := range []buildpack{{"cf/go", "3.0.0", "go.mod\n*.go\n"}, {"cf/mri", "1.1.0", ""}, {"cf/bundler", "1.2.0", ""}, {"cf/procfile", "2.0.0", "Procfile\n"}} {
		dir := "cnb/buildpacks/" + strings.ReplaceAll(bp.id, "/", "_") + "/" + bp.version
		files := map[string]string{dir + "/buildpack.toml": "api = \"0.9\"\n"}
		if bp.detect != "" {
			files[dir+"/"+DetectFilesName] = bp.detect
		}
		layers[bp.id] = layerOf(files)
	}
	diffID := func(id string) string { return must(layers[id].DiffID()).String() }

	labels := map[string]string{cnb.StackIDLabel: testStack}
	Expect(setLabel(labels, cnb.BuildpackOrderLabel, kpackcorev1alpha1.Order{
		{Group: []kpackcorev1alpha1.BuildpackRef{
			{BuildpackInfo: kpackcorev1alpha1.BuildpackInfo{Id: "cf/go", Version: "3.0.0"}},
		}},
		{Group: []kpackcorev1alpha1.BuildpackRef{
			{BuildpackInfo: kpackcorev1alpha1.BuildpackInfo{Id: "cf/ruby", Version: "1.0.0"}},
			{BuildpackInfo: kpackcorev1alpha1.BuildpackInfo{Id: "cf/procfile", Version: "2.0.0"}, Optional: true},
		}},
	})).To(Succeed())
	Expect(setLabel(labels, cnb.BuildpackLayersLabel, map[string]map[string]any{
		"cf/ruby": {"1.0.0": map[string]any{"api": "0.9", "order": kpackcorev1alpha1.Order{{Group: []kpackcorev1alpha1.BuildpackRef{
			{BuildpackInfo: kpackcorev1alpha1.BuildpackInfo{Id: "cf/mri", Version: "1.1.0"}},
			{BuildpackInfo: kpackcorev1alpha1.BuildpackInfo{Id: "cf/bundler", Version: "1.2.0"}},
		}}}}},
		"cf/mri":      {"1.1.0": map[string]any{"api": "0.9", "layerDiffID": diffID("cf/mri"), "homepage": "https://mri.test"}},
		"cf/bundler":  {"1.2.0": map[string]any{"api": "0.9", "layerDiffID": diffID("cf/bundler")}},
		"cf/procfile": {"2.0.0": map[string]any{"api": "0.9", "layerDiffID": diffID("cf/procfile")}},
		"cf/go":       {"3.0.0": map[string]any{"api": "0.9", "layerDiffID": diffID("cf/go")}},
	})).To(Succeed())
	Expect(setLabel(labels, cnb.BuilderMetadataLabel, map[string]any{
		"description": "Custom Builder built with kpack",
		"stack":       map[string]any{"runImage": map[string]any{"image": runImage}},
		"lifecycle":   map[string]any{"version": testLifecycleVersion},
	})).To(Succeed())
	return imageOf(labels, layerOf(map[string]string{"cnb/lifecycle/detector": "#!"}),
		layers["cf/go"], layers["cf/mri"], layers["cf/bundler"], layers["cf/procfile"])
}

// sourceFixture is an app's source as a registry image source: its files in one layer.
func sourceFixture(files map[string]string) v1.Image {
	return imageOf(nil, layerOf(files))
}

var expectedBuildpacks = kpackcorev1alpha1.BuildpackMetadataList{
	{Id: "cf/mri", Version: "1.1.0", Homepage: "https://mri.test"},
	{Id: "cf/bundler", Version: "1.2.0"},
	{Id: "cf/procfile", Version: "2.0.0"},
}

// kpackBuild is a Build as kpack's Image reconciler creates it for the Image app.
func kpackBuild(namespace, tag, source string) *kpackv1alpha2.Build {
	return &kpackv1alpha2.Build{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   namespace,
			Name:        "app-build-1",
			UID:         types.UID("6b1f6d1e-0000-4000-8000-000000000001"),
			Labels:      map[string]string{kpackv1alpha2.ImageLabel: "app", kpackv1alpha2.BuildNumberLabel: "1"},
			Annotations: map[string]string{kpackv1alpha2.BuildReasonAnnotation: kpackv1alpha2.BuildReasonConfig},
		},
		Spec: kpackv1alpha2.BuildSpec{
			Tags:               []string{tag, tag + ":b1"},
			ServiceAccountName: "builder",
			Source: kpackcorev1alpha1.SourceConfig{Registry: &kpackcorev1alpha1.Registry{
				Image:            source,
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "source-pull"}},
			}},
		},
	}
}

// asRebase turns a Build into the rebase kpack creates when only the run image changed.
func asRebase(build *kpackv1alpha2.Build, lastImage string) *kpackv1alpha2.Build {
	build = build.DeepCopy()
	build.Name = "app-build-2"
	build.Annotations[kpackv1alpha2.BuildReasonAnnotation] = kpackv1alpha2.BuildReasonStack
	build.Spec.LastBuild = &kpackv1alpha2.LastBuild{Image: lastImage, StackId: testStack}
	return build
}

// podFor is the pod kpack creates for a Build, made by kpack's own code.
func podFor(build *kpackv1alpha2.Build, builderImage, runImage string, secrets ...corev1.Secret) *corev1.Pod {
	pod, err := build.BuildPod(kpackv1alpha2.BuildPodImages{
		BuildInitImage:   "kpack/build-init",
		BuildWaiterImage: "kpack/build-waiter",
		CompletionImage:  "kpack/completion",
		RebaseImage:      "kpack/rebase",
	}, kpackv1alpha2.BuildContext{
		BuildPodBuilderConfig: kpackv1alpha2.BuildPodBuilderConfig{
			StackID:       testStack,
			RunImage:      runImage,
			Uid:           1000,
			Gid:           1000,
			PlatformAPIs:  []string{"0.8", "0.9"},
			ResolvedImage: builderImage,
		},
		Secrets:          secrets,
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "builder-pull"}},
	})
	Expect(err).NotTo(HaveOccurred())
	return pod
}

// decodeCompletion reads a completion container's termination message as kpack's
// cnb.DecompressBuildMetadata does.
func decodeCompletion(message string) map[string]any {
	zipped, err := base64.StdEncoding.DecodeString(message)
	Expect(err).NotTo(HaveOccurred())
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	Expect(err).NotTo(HaveOccurred())
	data, err := io.ReadAll(zr)
	Expect(err).NotTo(HaveOccurred())
	var decoded map[string]any
	Expect(json.Unmarshal(data, &decoded)).To(Succeed())
	return decoded
}

func must[T any](value T, err error) T {
	Expect(err).NotTo(HaveOccurred())
	return value
}
