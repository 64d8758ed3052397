package registry_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	kpackcorev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	"github.com/pivotal/kpack/pkg/registry/imagehelpers"

	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
)

// These specs read the seeded images the way kpack v0.18 does (pkg/cnb), with kpack's own
// label helpers and API types where kpack exports them, and check what kpack validates before
// it makes a ClusterStack, ClusterLifecycle, ClusterStore and Builder Ready.
var _ = Describe("Synthetic CNB images", func() {
	var (
		reg    *registry.Registry
		images registry.Images
	)

	BeforeEach(func() {
		var err error
		reg, err = registry.Start(context.Background(), registry.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(reg.Close)
		images, err = reg.Seed(context.Background())
		Expect(err).NotTo(HaveOccurred())
	})

	It("publishes a stack whose images carry the stack id and the build user", func() {
		Expect(images.Stack.ID).NotTo(BeEmpty())
		build := fetch(images.Stack.BuildImage)
		run := fetch(images.Stack.RunImage)

		for _, img := range []v1.Image{build, run} {
			Expect(imagehelpers.GetStringLabel(img, "io.buildpacks.stack.id")).To(Equal(images.Stack.ID))
			Expect(img.ConfigFile()).To(And(HaveField("OS", "linux"), HaveField("Architecture", "amd64")))
		}
		for _, env := range []string{"CNB_USER_ID", "CNB_GROUP_ID"} {
			value, err := imagehelpers.GetEnv(build, env)
			Expect(err).NotTo(HaveOccurred())
			Expect(strconv.Atoi(value)).To(BeNumerically(">", 0), env)
		}
		Expect(build.Digest()).NotTo(Equal(must(run.Digest())))
	})

	It("publishes a lifecycle with the APIs that kpack supports, in its last layer", func() {
		img := fetch(images.Lifecycle.Image)

		var descriptor struct {
			Lifecycle struct {
				Version string `json:"version"`
			} `json:"lifecycle"`
		}
		Expect(imagehelpers.GetLabel(img, "io.buildpacks.builder.metadata", &descriptor)).To(Succeed())
		Expect(descriptor.Lifecycle.Version).To(Equal(images.Lifecycle.Version))

		apis := lifecycleAPIs(img)
		// Creating a builder needs one of these platform APIs; a build pod one of the second set.
		Expect(apis.Platform.Supported).To(ContainElement(BeElementOf("0.3", "0.4", "0.5", "0.6", "0.7", "0.8")))
		Expect(apis.Platform.Supported).To(ContainElement(BeElementOf("0.7", "0.8", "0.9")))
		Expect(apis.Buildpack.Supported).NotTo(BeEmpty())

		layers := must(img.Layers())
		files := tarFiles(layers[len(layers)-1])
		Expect(files).To(HaveKey("/cnb/lifecycle/lifecycle"))
		for _, phase := range []string{"detector", "analyzer", "restorer", "builder", "exporter", "rebaser", "launcher"} {
			Expect(files).To(HaveKeyWithValue("/cnb/lifecycle/"+phase, "-> lifecycle"))
		}

		build := must(fetch(images.Stack.BuildImage).ConfigFile())
		Expect(img.ConfigFile()).To(And(HaveField("OS", build.OS), HaveField("Architecture", build.Architecture)))
	})

	It("publishes buildpackages that a Builder with the seeded stack and lifecycle accepts", func() {
		Expect(images.Buildpacks).To(HaveLen(4))
		supported := lifecycleAPIs(fetch(images.Lifecycle.Image)).Buildpack.Supported

		for _, bp := range images.Buildpacks {
			img := fetch(bp.Image)
			var layers map[string]map[string]struct {
				API         string                             `json:"api"`
				LayerDiffID string                             `json:"layerDiffID"`
				Stacks      []kpackcorev1alpha1.BuildpackStack `json:"stacks"`
			}
			Expect(imagehelpers.GetLabel(img, "io.buildpacks.buildpack.layers", &layers)).To(Succeed())
			Expect(layers).To(HaveLen(1))
			Expect(layers).To(HaveKey(bp.ID))
			Expect(layers[bp.ID]).To(HaveKey(bp.Version))
			info := layers[bp.ID][bp.Version]

			Expect(supported).To(ContainElement(info.API))
			Expect(info.Stacks).To(ContainElement(HaveField("ID", BeElementOf("*", images.Stack.ID))))

			layer, err := img.LayerByDiffID(must(v1.NewHash(info.LayerDiffID)))
			Expect(err).NotTo(HaveOccurred())
			dir := "/cnb/buildpacks/" + strings.ReplaceAll(bp.ID, "/", "_") + "/" + bp.Version
			files := tarFiles(layer)
			Expect(files).To(HaveKeyWithValue(dir+"/buildpack.toml", And(
				ContainSubstring(`id = "`+bp.ID+`"`),
				ContainSubstring(`version = "`+bp.Version+`"`),
				ContainSubstring(`api = "`+info.API+`"`),
			)))
			Expect(files).To(HaveKey(dir + "/bin/detect"))
			Expect(files).To(HaveKey(dir + "/bin/build"))

			var pkg kpackcorev1alpha1.BuildpackageInfo
			Expect(imagehelpers.GetLabel(img, "io.buildpacks.buildpackage.metadata", &pkg)).To(Succeed())
			Expect(pkg).To(And(HaveField("Id", bp.ID), HaveField("Version", bp.Version)))
		}
	})

	It("publishes buildpacks whose bin/detect detects the apps their namesakes detect", func() {
		detects := map[string][]string{
			"paketo-buildpacks/go":       {"go.mod", "main.go"},
			"paketo-buildpacks/java":     {"pom.xml", "build.gradle", "app.jar"},
			"paketo-buildpacks/nodejs":   {"package.json"},
			"paketo-buildpacks/procfile": {"Procfile"},
		}
		for _, bp := range images.Buildpacks {
			img := fetch(bp.Image)
			var layers map[string]map[string]struct {
				LayerDiffID string `json:"layerDiffID"`
			}
			Expect(imagehelpers.GetLabel(img, "io.buildpacks.buildpack.layers", &layers)).To(Succeed())
			files := tarFiles(must(img.LayerByDiffID(must(v1.NewHash(layers[bp.ID][bp.Version].LayerDiffID)))))
			dir := "/cnb/buildpacks/" + strings.ReplaceAll(bp.ID, "/", "_") + "/" + bp.Version
			Expect(files).To(HaveKey(dir + "/detect-files"))

			// Run bin/detect as the lifecycle would, in an app directory.
			bpDir := GinkgoT().TempDir()
			Expect(os.MkdirAll(filepath.Join(bpDir, "bin"), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(bpDir, "bin", "detect"), []byte(files[dir+"/bin/detect"]), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(bpDir, "detect-files"), []byte(files[dir+"/detect-files"]), 0o644)).To(Succeed())
			exitCode := func(appFiles ...string) int {
				app := GinkgoT().TempDir()
				for _, f := range appFiles {
					Expect(os.WriteFile(filepath.Join(app, f), nil, 0o644)).To(Succeed())
				}
				cmd := exec.Command(filepath.Join(bpDir, "bin", "detect"))
				cmd.Dir = app
				err := cmd.Run()
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					return exit.ExitCode()
				}
				Expect(err).NotTo(HaveOccurred())
				return 0
			}
			for _, f := range detects[bp.ID] {
				Expect(exitCode(f)).To(Equal(0), "%s detects %s", bp.ID, f)
			}
			Expect(exitCode("README.md")).To(Equal(100), "%s passes on an app it cannot build", bp.ID)
		}
	})

	It("publishes another stack, with its own id, to migrate to", func() {
		stack, err := reg.PublishStack(context.Background(), "io.buildpacks.stacks.noble")
		Expect(err).NotTo(HaveOccurred())
		Expect(stack.ID).To(Equal("io.buildpacks.stacks.noble"))
		for _, ref := range []registry.Ref{stack.BuildImage, stack.RunImage} {
			Expect(imagehelpers.GetStringLabel(fetch(ref), "io.buildpacks.stack.id")).To(Equal(stack.ID))
		}
		Expect(stack.RunImage.Digest).NotTo(Equal(images.Stack.RunImage.Digest))
	})

	It("publishes the same images again without changing them", func() {
		again, err := reg.Seed(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(images))
	})

	It("publishes a fixed run image to the same tag, keeping the old one pullable by digest", func() {
		fixed, err := reg.PublishRunImage(context.Background())
		Expect(err).NotTo(HaveOccurred())

		Expect(fixed.Tag).To(Equal(images.Stack.RunImage.Tag))
		Expect(fixed.Digest).NotTo(Equal(images.Stack.RunImage.Digest))
		img := fetch(registry.Ref{Tag: fixed.Tag})
		Expect(img.Digest()).To(HaveField("String()", fixed.Digest))
		Expect(imagehelpers.GetStringLabel(img, "io.buildpacks.stack.id")).To(Equal(images.Stack.ID))
		Expect(fetchPinned(images.Stack.RunImage).Digest()).To(HaveField("String()", images.Stack.RunImage.Digest))

		By("keeping the fix when seeding again")
		again, err := reg.Seed(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Stack.RunImage).To(Equal(fixed))
	})

	It("publishes a new version of a buildpack", func() {
		newer, err := reg.PublishBuildpack(context.Background(), "paketo-buildpacks/go", "1.1.0")
		Expect(err).NotTo(HaveOccurred())

		old := images.Buildpacks[0]
		Expect(old.ID).To(Equal("paketo-buildpacks/go"))
		Expect(newer.Image.Tag).To(Equal(strings.TrimSuffix(old.Image.Tag, old.Version) + "1.1.0"))
		Expect(newer.Image.Digest).NotTo(Equal(old.Image.Digest))
		var pkg kpackcorev1alpha1.BuildpackageInfo
		Expect(imagehelpers.GetLabel(fetch(newer.Image), "io.buildpacks.buildpackage.metadata", &pkg)).To(Succeed())
		Expect(pkg.Version).To(Equal("1.1.0"))
	})

	It("publishes a new lifecycle version", func() {
		newer, err := reg.PublishLifecycle(context.Background(), "0.21.0")
		Expect(err).NotTo(HaveOccurred())

		Expect(newer.Image.Digest).NotTo(Equal(images.Lifecycle.Image.Digest))
		Expect(imagehelpers.GetStringLabel(fetch(newer.Image), "io.buildpacks.lifecycle.version")).To(Equal("0.21.0"))
	})

	It("refuses versions and ids that kpack or the registry could not use", func() {
		_, err := reg.PublishBuildpack(context.Background(), "paketo-buildpacks/go", "latest")
		Expect(err).To(MatchError(ContainSubstring("MAJOR.MINOR.PATCH")))
		_, err = reg.PublishBuildpack(context.Background(), "Paketo/Go", "1.0.0")
		Expect(err).To(MatchError(ContainSubstring("not a repository path")))
		_, err = reg.PublishLifecycle(context.Background(), "0.21")
		Expect(err).To(MatchError(ContainSubstring("MAJOR.MINOR.PATCH")))
	})
})

var _ = Describe("Ref", func() {
	It("pins a tag to its digest", func() {
		ref := registry.Ref{Tag: "127.0.0.1:5000/cnb/stack/run:latest", Digest: "sha256:abc"}
		Expect(ref.Pinned()).To(Equal("127.0.0.1:5000/cnb/stack/run@sha256:abc"))
	})
})

// fetch reads ref by tag and checks that it is the published digest (unless ref has none).
func fetch(ref registry.Ref) v1.Image {
	GinkgoHelper()
	img, err := pull(ref.Tag, authn.Anonymous)
	Expect(err).NotTo(HaveOccurred())
	if ref.Digest != "" {
		Expect(img.Digest()).To(HaveField("String()", ref.Digest))
	}
	return img
}

// fetchPinned reads ref by digest.
func fetchPinned(ref registry.Ref) v1.Image {
	GinkgoHelper()
	img, err := pull(ref.Pinned(), authn.Anonymous)
	Expect(err).NotTo(HaveOccurred())
	return img
}

// lifecycleAPIs reads the label from which kpack takes a lifecycle's APIs.
func lifecycleAPIs(img v1.Image) kpackv1alpha2.LifecycleAPIs {
	GinkgoHelper()
	var apis kpackv1alpha2.LifecycleAPIs
	Expect(imagehelpers.GetLabel(img, "io.buildpacks.lifecycle.apis", &apis)).To(Succeed())
	return apis
}

// tarFiles maps a layer's paths to file contents, or to "-> target" for symbolic links.
func tarFiles(layer v1.Layer) map[string]string {
	GinkgoHelper()
	rc := must(layer.Uncompressed())
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		Expect(err).NotTo(HaveOccurred())
		switch h.Typeflag {
		case tar.TypeReg:
			files[h.Name] = string(must(io.ReadAll(tr)))
		case tar.TypeSymlink:
			files[h.Name] = "-> " + h.Linkname
		}
	}
}
