// Command lifecycle-image writes the Cloud Native Buildpacks lifecycle image that kpack's
// ClusterLifecycle names, as an OCI image layout, without Docker and without the internet.
//
// The image is laid out as the lifecycle's own release image (tools/packager and tools/image in
// github.com/buildpacks/lifecycle): a base, then one layer with /cnb/lifecycle.toml and
// /cnb/lifecycle/{lifecycle,launcher} with the phase symlinks, the labels
// io.buildpacks.lifecycle.apis, io.buildpacks.lifecycle.version and
// io.buildpacks.builder.metadata, and WorkingDir /layers. kpack copies only the image's last
// layer into builders and reads the APIs and the version from the labels, so the lifecycle layer
// comes last and the labels are computed from the lifecycle module this command is built with.
//
// The base is made in process, as cf-hnc-image's (hack/tools/ko/internal/baseimage, which this
// module cannot import): /etc/passwd and /etc/group with the user nonroot (65532), /tmp, and the
// CA certificates of the build machine.
//
//	lifecycle-image --lifecycle bin/cnb-lifecycle --launcher bin/cnb-launcher --oci-layout DIR
//
// Every time in the image is fixed, so the same inputs give the same digests.
package main

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/buildpacks/lifecycle/api"
	"github.com/buildpacks/lifecycle/archive"
	"github.com/buildpacks/lifecycle/buildpack"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	lifecycleModule = "github.com/buildpacks/lifecycle"
	// nonRoot is the base's user, as in cf-hnc-image; nothing runs this image (kpack takes its
	// last layer), so it only says who the files are not for.
	nonRoot = 65532
	// refName is the layout annotation that names the image.
	refName = "lifecycle"
)

// phases are the lifecycle's phase names, symlinks to the lifecycle binary (the lifecycle's
// Makefile, build-*-symlinks). kpack's build pods run /cnb/lifecycle/<phase>.
var phases = []string{"detector", "analyzer", "restorer", "builder", "exporter", "rebaser", "creator", "extender"}

func main() {
	var (
		lifecycleBin = flag.String("lifecycle", "", "the lifecycle binary (cmd/lifecycle, built with CGO_ENABLED=0)")
		launcherBin  = flag.String("launcher", "", "the launcher binary (cmd/launcher, built with CGO_ENABLED=0)")
		dir          = flag.String("oci-layout", "", "write the image to this new OCI image layout directory")
		caCerts      = flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to put into the image")
	)
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("[lifecycle-image] ")
	if *lifecycleBin == "" || *launcherBin == "" || *dir == "" {
		log.Fatal("--lifecycle, --launcher and --oci-layout are required")
	}
	version, err := lifecycleVersion()
	if err != nil {
		log.Fatal(err)
	}
	for _, bin := range []string{*lifecycleBin, *launcherBin} {
		if err := checkBinary(bin, version); err != nil {
			log.Fatal(err)
		}
	}
	certs, err := os.ReadFile(*caCerts)
	if err != nil {
		log.Fatalf("the CA certificates for the image: %v (set --ca-certificates)", err)
	}
	img, err := image(version, *lifecycleBin, *launcherBin, certs)
	if err != nil {
		log.Fatal(err)
	}
	p, err := layout.Write(*dir, empty.Index)
	if err != nil {
		log.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": refName})); err != nil {
		log.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s@%s\n", refName, digest)
}

// lifecycleVersion is the version of the lifecycle module this command is built with, which
// is also where its API lists come from, without the leading v (0.20.12).
func lifecycleVersion() (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", errors.New("no build information in this binary: build it with module support")
	}
	for _, dep := range info.Deps {
		if dep.Path == lifecycleModule {
			return strings.TrimPrefix(dep.Version, "v"), nil
		}
	}
	return "", fmt.Errorf("this binary does not depend on %s", lifecycleModule)
}

// checkBinary refuses a binary of another lifecycle version than the labels would announce, or
// one that needs a C library: the builder and run images kpack runs it in may have none.
func checkBinary(file, version string) error {
	info, err := buildinfo.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	// Built from the wrapper, the binary records the module of its main package as its main
	// module.
	found := ""
	for _, m := range append([]*debug.Module{&info.Main}, info.Deps...) {
		if m.Path == lifecycleModule {
			found = strings.TrimPrefix(m.Version, "v")
		}
	}
	if found != version {
		return fmt.Errorf("%s is built from %s %q, this command from %q", file, lifecycleModule, found, version)
	}
	for _, s := range info.Settings {
		if s.Key == "CGO_ENABLED" && s.Value != "0" {
			return fmt.Errorf("%s is built with CGO_ENABLED=%s; build it with CGO_ENABLED=0", file, s.Value)
		}
	}
	return nil
}

// descriptor is /cnb/lifecycle.toml, as tools/image reads it.
type descriptor struct {
	APIs struct {
		Buildpack apiSet `toml:"buildpack" json:"buildpack"`
		Platform  apiSet `toml:"platform" json:"platform"`
	} `toml:"apis"`
	Lifecycle lifecycleInfo `toml:"lifecycle"`
}

type apiSet struct {
	Deprecated []string `toml:"deprecated" json:"deprecated"`
	Supported  []string `toml:"supported" json:"supported"`
}

type lifecycleInfo struct {
	Version string `toml:"version" json:"version"`
}

// descriptorTOML renders the lifecycle's lifecycle.toml template as its tools/packager does.
func descriptorTOML(version string) []byte {
	var sbomFormats []string
	for _, f := range []string{buildpack.MediaTypeCycloneDX, buildpack.MediaTypeSPDX, buildpack.MediaTypeSyft} {
		sbomFormats = append(sbomFormats, fmt.Sprintf("%q", f))
	}
	return fmt.Appendf(nil, `[apis]
[apis.buildpack]
  deprecated = %s
  supported = %s
[apis.platform]
  deprecated = %s
  supported = %s

# For backwards compatibility the minimum supported APIs are provided in RFC-0011 format
# https://github.com/buildpacks/rfcs/blob/main/text/0011-lifecycle-descriptor.md
[api]
  platform = "0.7"
  buildpack = "0.7"

[lifecycle]
  version = "%s"
  sbom-formats = [%s]
`, api.Buildpack.Deprecated, api.Buildpack.Supported, api.Platform.Deprecated, api.Platform.Supported,
		version, strings.Join(sbomFormats, ", "))
}

// labels are the ones tools/image sets, computed from the rendered descriptor as it does.
func labels(descriptorFile []byte) (map[string]string, error) {
	var d descriptor
	if _, err := toml.Decode(string(descriptorFile), &d); err != nil {
		return nil, fmt.Errorf("lifecycle.toml: %w", err)
	}
	if len(d.APIs.Buildpack.Supported) == 0 || len(d.APIs.Platform.Supported) == 0 {
		return nil, errors.New("lifecycle.toml lists no supported APIs")
	}
	apis, err := json.Marshal(d.APIs)
	if err != nil {
		return nil, err
	}
	legacy, err := json.Marshal(struct {
		Lifecycle lifecycleInfo `json:"lifecycle"`
		API       struct {
			Buildpack string `json:"buildpack"`
			Platform  string `json:"platform"`
		} `json:"api"`
	}{
		Lifecycle: d.Lifecycle,
		API: struct {
			Buildpack string `json:"buildpack"`
			Platform  string `json:"platform"`
		}{d.APIs.Buildpack.Supported[0], d.APIs.Platform.Supported[0]},
	})
	if err != nil {
		return nil, err
	}
	return map[string]string{
		"io.buildpacks.lifecycle.apis":    string(apis),
		"io.buildpacks.lifecycle.version": d.Lifecycle.Version,
		"io.buildpacks.builder.metadata":  string(legacy),
	}, nil
}

func image(version, lifecycleBin, launcherBin string, caCerts []byte) (v1.Image, error) {
	desc := descriptorTOML(version)
	imageLabels, err := labels(desc)
	if err != nil {
		return nil, err
	}
	base, err := baseLayer(caCerts)
	if err != nil {
		return nil, err
	}
	lifecycle, err := lifecycleLayer(desc, lifecycleBin, launcherBin)
	if err != nil {
		return nil, err
	}
	// kpack takes the last layer as the lifecycle: it must stay last.
	img, err := mutate.AppendLayers(empty.Image, base, lifecycle)
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Created = v1.Time{Time: archive.NormalizedModTime}
	cfg.Config.User = fmt.Sprintf("%d:%d", nonRoot, nonRoot)
	cfg.Config.WorkingDir = "/layers"
	cfg.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	cfg.Config.Labels = imageLabels
	return mutate.ConfigFile(img, cfg)
}

// tarLayer is an uncompressed OCI layer of what write writes.
func tarLayer(write func(tw *tar.Writer) error) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := errors.Join(write(tw), tw.Close()); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}

type entry struct {
	name     string
	typeflag byte
	mode     int64
	uid      int
	data     []byte
	linkname string
}

// writeEntries gives every entry the lifecycle's normalized time (archive.NormalizedModTime), as
// its release does, and root ownership unless the entry names a user.
func writeEntries(tw *tar.Writer, entries []entry) error {
	for _, e := range entries {
		hdr := &tar.Header{Typeflag: e.typeflag, Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid,
			Size: int64(len(e.data)), Linkname: e.linkname, ModTime: archive.NormalizedModTime}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return nil
}

// baseLayer holds what the lifecycle, a static Go binary, needs from a distribution.
func baseLayer(caCerts []byte) (v1.Layer, error) {
	users := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRoot, nonRoot)
	groups := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonRoot)
	return tarLayer(func(tw *tar.Writer) error {
		return writeEntries(tw, []entry{
			{name: "etc/", typeflag: tar.TypeDir, mode: 0o755},
			{name: "etc/passwd", typeflag: tar.TypeReg, mode: 0o644, data: []byte(users)},
			{name: "etc/group", typeflag: tar.TypeReg, mode: 0o644, data: []byte(groups)},
			{name: "etc/ssl/", typeflag: tar.TypeDir, mode: 0o755},
			{name: "etc/ssl/certs/", typeflag: tar.TypeDir, mode: 0o755},
			{name: "etc/ssl/certs/ca-certificates.crt", typeflag: tar.TypeReg, mode: 0o644, data: caCerts},
			{name: "home/", typeflag: tar.TypeDir, mode: 0o755},
			{name: "home/nonroot/", typeflag: tar.TypeDir, mode: 0o700, uid: nonRoot},
			{name: "tmp/", typeflag: tar.TypeDir, mode: 0o1777},
		})
	})
}

// lifecycleLayer is the release's lifecycle layer: the packager's archive (lifecycle.toml and
// the lifecycle/ directory, walked in lexical order) under /cnb, owned by root, with
// absolute names as tools/image writes them.
func lifecycleLayer(descriptorFile []byte, lifecycleBin, launcherBin string) (v1.Layer, error) {
	lifecycle, err := os.ReadFile(lifecycleBin)
	if err != nil {
		return nil, err
	}
	launcher, err := os.ReadFile(launcherBin)
	if err != nil {
		return nil, err
	}
	files := map[string]entry{
		"launcher":  {typeflag: tar.TypeReg, mode: 0o755, data: launcher},
		"lifecycle": {typeflag: tar.TypeReg, mode: 0o755, data: lifecycle},
	}
	for _, phase := range phases {
		files[phase] = entry{typeflag: tar.TypeSymlink, mode: 0o777, linkname: "lifecycle"}
	}
	entries := []entry{
		{name: "/cnb", typeflag: tar.TypeDir, mode: 0o755},
		{name: "/cnb/lifecycle.toml", typeflag: tar.TypeReg, mode: 0o644, data: descriptorFile},
		{name: "/cnb/lifecycle", typeflag: tar.TypeDir, mode: 0o755},
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		e := files[name]
		e.name = path.Join("/cnb/lifecycle", name)
		entries = append(entries, e)
	}
	return tarLayer(func(tw *tar.Writer) error { return writeEntries(tw, entries) })
}
