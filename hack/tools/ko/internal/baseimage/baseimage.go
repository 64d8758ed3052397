// Package baseimage assembles, in process, the base image that this module's image commands
// (cf-hnc-image, hnc-image, kpack-images) give ko instead of ko's default base, which lives in a registry
// on the internet: one layer with /etc/passwd and /etc/group for the user nonroot
// (65532:65532), its home directory, /tmp, and the CA certificates of the build machine, and a
// config that runs as 65532.
package baseimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/ko/pkg/build"
)

// NonRoot is the user and group the images run as.
const NonRoot = 65532

// User is NonRoot as an image config's User.
var User = fmt.Sprintf("%d:%d", NonRoot, NonRoot)

// New is the base for every platform: an index if there is more than one.
func New(platforms []string, caCerts []byte, created v1.Time) (build.Result, error) {
	layer, err := Layer(caCerts, created.Time)
	if err != nil {
		return nil, err
	}
	var images []mutate.IndexAddendum
	for _, p := range platforms {
		platform, err := v1.ParsePlatform(p)
		if err != nil {
			return nil, err
		}
		img, err := mutate.AppendLayers(empty.Image, layer)
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
		cfg.OS, cfg.Architecture, cfg.Variant = platform.OS, platform.Architecture, platform.Variant
		cfg.Created = created
		cfg.Config.User = User
		cfg.Config.WorkingDir = "/home/nonroot"
		cfg.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			return nil, err
		}
		images = append(images, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: platform}})
	}
	if len(images) == 1 {
		return images[0].Add.(v1.Image), nil
	}
	return mutate.IndexMediaType(mutate.AppendManifests(empty.Index, images...), types.OCIImageIndex), nil
}

// Layer holds what a static Go binary needs from a distribution: users, a home, /tmp and
// CA certificates.
func Layer(caCerts []byte, created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(path string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: created})
	}
	file := func(path string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: 0o644, Size: int64(len(data)), ModTime: created}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	users := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot)
	groups := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRoot)
	err := errors.Join(
		dir("etc", 0o755, 0), file("etc/passwd", []byte(users)), file("etc/group", []byte(groups)),
		dir("etc/ssl", 0o755, 0), dir("etc/ssl/certs", 0o755, 0), file("etc/ssl/certs/ca-certificates.crt", caCerts),
		dir("home", 0o755, 0), dir("home/nonroot", 0o700, NonRoot), dir("tmp", 0o1777, 0),
		tw.Close(),
	)
	if err != nil {
		return nil, err
	}
	return FromTar(buf.Bytes())
}

// linkLayer is a layer with a symbolic link at name (a path without a leading slash) to target,
// and the directories above it.
func linkLayer(name, target string, created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var errs []error
	for i, c := range name {
		if c == '/' {
			errs = append(errs, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name[:i] + "/", Mode: 0o755, ModTime: created}))
		}
	}
	errs = append(errs,
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: created}),
		tw.Close())
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return FromTar(buf.Bytes())
}

// FromTar is an OCI layer with the uncompressed tar data.
func FromTar(data []byte) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}
