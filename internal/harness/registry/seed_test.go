package registry_test

import (
	"archive/tar"
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	kpackcorev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	"github.com/pivotal/kpack/pkg/registry/imagehelpers"

	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
)

// These specs read the seeded images the way kpack v0.18 (pkg/cnb), the CNB lifecycle and the
// node do, with kpack's own label helpers and API types where kpack exports them.
var _ = Describe("Seeded images", func() {
	var (
		reg    *registry.Registry
		images registry.Images
	)

	BeforeEach(func(ctx SpecContext) {
		var err error
		reg, err = registry.Start(context.Background(), registry.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(reg.Close)
		images, err = reg.Seed(ctx, sources)
		Expect(err).NotTo(HaveOccurred())
	})

	It("publishes a stack whose images carry the stack id, run as the CNB user, and have a shell", func() {
		build, run := fetch(images.Stack.BuildImage), fetch(images.Stack.RunImage)
		for _, img := range []v1.Image{build, run} {
			Expect(imagehelpers.GetStringLabel(img, "io.buildpacks.stack.id")).To(Equal(images.Stack.ID))
			cfg := must(img.ConfigFile())
			Expect(cfg).To(And(HaveField("OS", "linux"), HaveField("Architecture", "amd64")))
			Expect(cfg.Config.User).To(Equal("1000:1000"))

			files := imageFiles(img)
			Expect(files).To(HaveKeyWithValue("/bin/sh", "-> /bin/busybox"))
			Expect(files).To(HaveKeyWithValue("/etc/passwd", ContainSubstring("cnb:x:1000:1000:")))
			Expect(files).To(HaveKey("/etc/ssl/certs/ca-certificates.crt"))
			Expect(files).To(HaveKeyWithValue("/tmp", "dir 1777"))
			Expect(files).To(HaveKeyWithValue("/home/cnb", "dir 755 owned by 1000"))
		}
		for _, env := range []string{"CNB_USER_ID", "CNB_GROUP_ID"} {
			Expect(strconv.Atoi(must(imagehelpers.GetEnv(build, env)))).To(Equal(1000), env)
		}
		Expect(build.Digest()).NotTo(Equal(must(run.Digest())))
	})

	It("publishes the CNB lifecycle's own image, its programs in the last layer as kpack takes them", func() {
		img := fetch(images.Lifecycle.Image)
		Expect(images.Lifecycle.Version).To(Equal("0.20.12"))
		var descriptor struct {
			Lifecycle struct {
				Version string `json:"version"`
			} `json:"lifecycle"`
		}
		Expect(imagehelpers.GetLabel(img, "io.buildpacks.builder.metadata", &descriptor)).To(Succeed())
		Expect(descriptor.Lifecycle.Version).To(Equal(images.Lifecycle.Version))
		apis := lifecycleAPIs(img)
		// kpack v0.18 makes builders with one of these platform APIs and runs build pods with one.
		Expect(apis.Platform.Supported).To(ContainElements("0.8", "0.13"))
		Expect(apis.Buildpack.Supported).To(ContainElement(buildpacks.API))

		layers := must(img.Layers())
		files := tarFiles(layers[len(layers)-1])
		Expect(files).To(HaveKey("/cnb/lifecycle/lifecycle"))
		Expect(files).To(HaveKey("/cnb/lifecycle/launcher"))
		for _, phase := range []string{"detector", "analyzer", "restorer", "builder", "exporter", "rebaser"} {
			Expect(files).To(HaveKeyWithValue("/cnb/lifecycle/"+phase, "-> lifecycle"))
		}
	})

	It("publishes cf-hnc's buildpacks, whose programs detect what they build, as the lifecycle runs them", func() {
		Expect(images.Buildpacks).To(HaveExactElements(
			HaveField("ID", buildpacks.StaticfileID), HaveField("ID", buildpacks.ProcfileID)), "Cloud Foundry's detection order")
		detects := map[string]string{buildpacks.StaticfileID: "Staticfile", buildpacks.ProcfileID: "Procfile"}
		for _, bp := range images.Buildpacks {
			img := fetch(bp.Image)
			var layers map[string]map[string]struct {
				API         string                             `json:"api"`
				LayerDiffID string                             `json:"layerDiffID"`
				Stacks      []kpackcorev1alpha1.BuildpackStack `json:"stacks"`
			}
			Expect(imagehelpers.GetLabel(img, "io.buildpacks.buildpack.layers", &layers)).To(Succeed())
			Expect(layers).To(HaveKey(bp.ID))
			info := layers[bp.ID][bp.Version]
			Expect(info.API).To(Equal(buildpacks.API))
			Expect(info.Stacks).To(ContainElement(HaveField("ID", "*")))
			var pkg kpackcorev1alpha1.BuildpackageInfo
			Expect(imagehelpers.GetLabel(img, "io.buildpacks.buildpackage.metadata", &pkg)).To(Succeed())
			Expect(pkg).To(And(HaveField("Id", bp.ID), HaveField("Version", bp.Version)))

			dir := "/cnb/buildpacks/" + strings.ReplaceAll(bp.ID, "/", "_") + "/" + bp.Version
			files := tarFiles(must(img.LayerByDiffID(must(v1.NewHash(info.LayerDiffID)))))
			Expect(files).To(HaveKeyWithValue(dir+"/buildpack.toml", And(
				ContainSubstring(`id = "`+bp.ID+`"`), ContainSubstring(`version = "`+bp.Version+`"`))))
			Expect(files).To(HaveKeyWithValue(dir+"/bin/build", "-> detect"))

			By("running the packaged bin/detect of " + bp.ID + " as the lifecycle does")
			bpDir := GinkgoT().TempDir()
			Expect(os.MkdirAll(filepath.Join(bpDir, "bin"), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(bpDir, "bin", "detect"), []byte(files[dir+"/bin/detect"]), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(bpDir, "buildpack.toml"), []byte(files[dir+"/buildpack.toml"]), 0o644)).To(Succeed())
			Expect(detect(bpDir, detects[bp.ID])).To(Equal(0), "%s detects an app with a %s", bp.ID, detects[bp.ID])
			Expect(detect(bpDir, "README.md")).To(Equal(100), "%s passes on an app it cannot build", bp.ID)
		}
		staticfile := fetch(images.Buildpacks[0].Image)
		Expect(imageFiles(staticfile)).To(HaveKey("/cnb/buildpacks/cf-hnc_staticfile/1.0.0/bin/" + buildpacks.StaticfileServer))
	})

	It("publishes kpack's images of build pods, each with its program where kpack runs it, as a non-root user", func() {
		for name, ref := range map[string]registry.Ref{
			"build-init": images.Kpack.BuildInit, "build-waiter": images.Kpack.BuildWaiter,
			"completion": images.Kpack.Completion, "rebase": images.Kpack.Rebase,
		} {
			img := fetch(ref)
			Expect(ref.Tag).To(HavePrefix(reg.Host() + "/cnb/kpack/" + name + ":"))
			Expect(imageFiles(img)).To(HaveKeyWithValue("/cnb/process/"+name, "-> /ko-app/"+name))
			user := must(img.ConfigFile()).Config.User
			uid, err := strconv.Atoi(strings.Split(user, ":")[0])
			Expect(err).NotTo(HaveOccurred(), "kpack's rebase pod asks for a numeric non-root user, has %q", user)
			Expect(uid).To(BeNumerically(">", 0))
		}
		Expect(kpackv1alpha2.PrepareCommand).To(Equal("/cnb/process/build-init"), "where kpack v0.18 runs them")
	})

	It("publishes a pause image with Kubernetes' static pause program", func() {
		img := fetch(images.Pause)
		Expect(must(img.ConfigFile()).Config.Entrypoint).To(Equal([]string{"/pause"}))
		program := filepath.Join(GinkgoT().TempDir(), "pause")
		Expect(os.WriteFile(program, []byte(imageFiles(img)["/pause"]), 0o755)).To(Succeed())
		f, err := elf.Open(program)
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		Expect(f.Progs).NotTo(ContainElement(HaveField("Type", elf.PT_INTERP)), "static: no dynamic loader in the image")
	})

	It("publishes another stack, with its own id, to migrate to", func(ctx SpecContext) {
		stack, err := reg.PublishStack(ctx, "io.buildpacks.stacks.noble")
		Expect(err).NotTo(HaveOccurred())
		Expect(stack.ID).To(Equal("io.buildpacks.stacks.noble"))
		for _, ref := range []registry.Ref{stack.BuildImage, stack.RunImage} {
			Expect(imagehelpers.GetStringLabel(fetch(ref), "io.buildpacks.stack.id")).To(Equal(stack.ID))
		}
		Expect(stack.RunImage.Digest).NotTo(Equal(images.Stack.RunImage.Digest))
	})

	It("publishes the same images again without changing them", func(ctx SpecContext) {
		again, err := reg.Seed(ctx, sources)
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(images))
	})

	It("publishes a fixed run image to the same tag, with a new base layer, keeping the old one pullable by digest", func(ctx SpecContext) {
		fixed, err := reg.PublishRunImage(ctx)
		Expect(err).NotTo(HaveOccurred())

		Expect(fixed.Tag).To(Equal(images.Stack.RunImage.Tag))
		Expect(fixed.Digest).NotTo(Equal(images.Stack.RunImage.Digest))
		img, old := fetch(registry.Ref{Tag: fixed.Tag}), fetchPinned(images.Stack.RunImage)
		Expect(img.Digest()).To(HaveField("String()", fixed.Digest))
		Expect(imagehelpers.GetStringLabel(img, "io.buildpacks.stack.id")).To(Equal(images.Stack.ID))
		Expect(must(img.Layers())[0].Digest()).NotTo(Equal(must(must(old.Layers())[0].Digest())), "the fix is in the base layer")
		Expect(imageFiles(img)["/etc/os-release"]).To(ContainSubstring("PATCH_LEVEL=1"))
		Expect(imageFiles(old)["/etc/os-release"]).To(ContainSubstring("PATCH_LEVEL=0"))
		Expect(imageFiles(img)["/etc/os-release"]).To(ContainSubstring(`VERSION_ID="1"`), "a fix is the same distribution")

		By("keeping the fix when seeding again")
		again, err := reg.Seed(ctx, sources)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Stack.RunImage).To(Equal(fixed))
	})

	It("publishes a new version of a buildpack: the same programs, another version", func(ctx SpecContext) {
		newer, err := reg.PublishBuildpack(ctx, buildpacks.ProcfileID, "1.1.0")
		Expect(err).NotTo(HaveOccurred())
		old := images.Buildpacks[1]
		Expect(newer.Image.Tag).To(Equal(strings.TrimSuffix(old.Image.Tag, old.Version) + "1.1.0"))
		Expect(newer.Image.Digest).NotTo(Equal(old.Image.Digest))
		Expect(imageFiles(fetch(newer.Image))).To(HaveKeyWithValue("/cnb/buildpacks/cf-hnc_procfile/1.1.0/buildpack.toml", ContainSubstring(`version = "1.1.0"`)))
	})

	It("refuses versions and ids it cannot publish", func(ctx SpecContext) {
		_, err := reg.PublishBuildpack(ctx, buildpacks.ProcfileID, "latest")
		Expect(err).To(MatchError(ContainSubstring("MAJOR.MINOR.PATCH")))
		_, err = reg.PublishBuildpack(ctx, "Paketo/Go", "1.0.0")
		Expect(err).To(MatchError(ContainSubstring("not a repository path")))
		_, err = reg.PublishBuildpack(ctx, "paketo-buildpacks/go", "1.0.0")
		Expect(err).To(MatchError(ContainSubstring(`unknown buildpack id "paketo-buildpacks/go"`)))
	})
})

var _ = Describe("A registry that was not seeded", func() {
	It("publishes nothing, and says why", func(ctx SpecContext) {
		reg, err := registry.Start(context.Background(), registry.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(reg.Close)
		_, err = reg.PublishRunImage(ctx)
		Expect(err).To(MatchError(ContainSubstring("call Seed first")))
	})
})

var _ = Describe("Ref", func() {
	It("pins a tag to its digest", func() {
		ref := registry.Ref{Tag: "127.0.0.1:5000/cnb/stack/run:latest", Digest: "sha256:abc"}
		Expect(ref.Pinned()).To(Equal("127.0.0.1:5000/cnb/stack/run@sha256:abc"))
	})
})

// detect runs a buildpack's bin/detect in an app with one file, with the environment the
// lifecycle gives it, and returns its exit code.
func detect(bpDir, appFile string) int {
	GinkgoHelper()
	app := GinkgoT().TempDir()
	Expect(os.WriteFile(filepath.Join(app, appFile), nil, 0o644)).To(Succeed())
	cmd := exec.Command(filepath.Join(bpDir, "bin", "detect"))
	cmd.Dir = app
	platform := GinkgoT().TempDir()
	cmd.Env = []string{"CNB_BUILDPACK_DIR=" + bpDir, "CNB_PLATFORM_DIR=" + platform, "CNB_BUILD_PLAN_PATH=" + filepath.Join(platform, "plan.toml")}
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	Expect(err).NotTo(HaveOccurred())
	return 0
}

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

// imageFiles is tarFiles of the image's flattened file system.
func imageFiles(img v1.Image) map[string]string {
	GinkgoHelper()
	return readTar(mutate.Extract(img))
}

// tarFiles maps a layer's paths to file contents, "-> target" for symbolic links, and
// "dir <mode>[ owned by <uid>]" for directories.
func tarFiles(layer v1.Layer) map[string]string {
	GinkgoHelper()
	return readTar(must(layer.Uncompressed()))
}

func readTar(rc io.ReadCloser) map[string]string {
	GinkgoHelper()
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		Expect(err).NotTo(HaveOccurred())
		name := "/" + strings.TrimPrefix(strings.TrimSuffix(h.Name, "/"), "/")
		switch h.Typeflag {
		case tar.TypeReg:
			files[name] = string(must(io.ReadAll(tr)))
		case tar.TypeSymlink:
			files[name] = "-> " + h.Linkname
		case tar.TypeDir:
			files[name] = "dir " + strconv.FormatInt(h.Mode&0o7777, 8)
			if h.Uid != 0 {
				files[name] += " owned by " + strconv.Itoa(h.Uid)
			}
		}
	}
}
