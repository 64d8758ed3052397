package install_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// `make image` runs bin/cf-hnc-image (hack/tools/ko) as this spec does.
var _ = Describe("The manager's image (make image)", func() {
	It("runs the manager as a non-root user that the image knows, with CA certificates, and carries the CF API", func(ctx SpecContext) {
		project := filepath.Dir(configDir())
		builder := filepath.Join(project, "bin", "cf-hnc-image")
		Expect(builder).To(BeAnExistingFile(), "run `make tools`: it builds %s", builder)
		dir := GinkgoT().TempDir()
		cmd := exec.CommandContext(ctx, builder, "--project", project, "--oci-layout", dir)
		cmd.Stderr = GinkgoWriter
		out, err := cmd.Output()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(HavePrefix(dir + "@sha256:"))

		index, err := layout.ImageIndexFromPath(dir)
		Expect(err).NotTo(HaveOccurred())
		manifest, err := index.IndexManifest()
		Expect(err).NotTo(HaveOccurred())
		Expect(manifest.Manifests).To(HaveLen(1))
		img, err := index.Image(manifest.Manifests[0].Digest)
		Expect(err).NotTo(HaveOccurred())
		config, err := img.ConfigFile()
		Expect(err).NotTo(HaveOccurred())

		By("running as 65532, not root")
		user, group, _ := strings.Cut(config.Config.User, ":")
		uid, err := strconv.Atoi(user)
		Expect(err).NotTo(HaveOccurred(), "a numeric user, so that runAsNonRoot can verify it: %q", config.Config.User)
		Expect(uid).To(Equal(65532))
		Expect(group).To(Equal("65532"))

		files := imageFiles(img)
		Expect(string(files["etc/passwd"])).To(ContainSubstring("nonroot:x:65532:65532:"))
		Expect(string(files["etc/ssl/certs/ca-certificates.crt"])).To(ContainSubstring("BEGIN CERTIFICATE"))

		By("starting the manager")
		Expect(config.Config.Entrypoint).To(HaveLen(1))
		entrypoint := strings.TrimPrefix(config.Config.Entrypoint[0], "/")
		Expect(slices.Collect(maps.Keys(files))).To(ContainElement(entrypoint), "an executable entrypoint")
		Expect(bytes.Contains(files[entrypoint], []byte("cert-rotation"))).To(BeTrue(), "the entrypoint is cf-hnc's manager")

		By("carrying the CF API at /ko-app/cf-api, which config/cf-api runs from this image")
		Expect(files).To(HaveKey("ko-app/cf-api"), "an executable /ko-app/cf-api")
		Expect(bytes.Contains(files["ko-app/cf-api"], []byte("cf_on_k8s"))).To(BeTrue(), "it is cf-hnc's CF API")
		Expect(config.OS + "/" + config.Architecture).To(Equal("linux/" + goarch()))
	}, SpecTimeout(15*time.Minute))
})

// imageFiles are the regular files of the image's flattened file system; the binaries are
// kept only if executable.
func imageFiles(img v1.Image) map[string][]byte {
	GinkgoHelper()
	files := map[string][]byte{}
	r := mutate.Extract(img)
	defer r.Close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		Expect(err).NotTo(HaveOccurred())
		path := strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")
		if h.Typeflag != tar.TypeReg || (strings.HasPrefix(path, "ko-app/") && h.Mode&0o111 == 0) {
			continue
		}
		var buf bytes.Buffer
		_, err = io.Copy(&buf, tr)
		Expect(err).NotTo(HaveOccurred())
		files[path] = buf.Bytes()
	}
}

// goarch is the Go toolchain's architecture, the image's default platform.
func goarch() string {
	out, err := exec.Command("go", "env", "GOARCH").Output()
	Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(string(out))
}
