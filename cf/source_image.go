package cf

// The image of an app's source that a CFPackage names: one tar layer holding the app's files at
// its root, with their modes and one fixed modification time, pushed to the app's package
// repository in its space's repository with the space's registry credentials. kubectl cf packs a
// directory into it; the CF API converts the zip that the cf CLI uploads (ZipToLayer). Both give
// the same image for the same files.

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	kauth "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// SourceModTime is the modification time of every file of a layer, as the buildpack lifecycle gives
// exported files: the same source packs to the same digest.
var SourceModTime = time.Date(1980, time.January, 1, 0, 0, 1, 0, time.UTC)

// SourceLayer writes the tar layer of an app's source: directories, regular files and symbolic links,
// each with its permission bits and SourceModTime.
type SourceLayer struct {
	w *tar.Writer
	// Files counts the regular files and symbolic links written, Bytes the regular files' size.
	Files int
	Bytes int64
}

// NewSourceLayer writes a layer to w; Close ends it.
func NewSourceLayer(w io.Writer) *SourceLayer { return &SourceLayer{w: tar.NewWriter(w)} }

// Dir writes a directory; name has no trailing slash.
func (l *SourceLayer) Dir(name string, mode fs.FileMode) error {
	return l.w.WriteHeader(l.header(tar.TypeDir, name+"/", mode))
}

// Symlink writes a symbolic link to target, as the cf CLI packs a link: as a link.
func (l *SourceLayer) Symlink(name, target string, mode fs.FileMode) error {
	hdr := l.header(tar.TypeSymlink, name, mode)
	hdr.Linkname = target
	l.Files++
	return l.w.WriteHeader(hdr)
}

// File writes a regular file of size bytes read from content; an error reading content is
// returned as it is.
func (l *SourceLayer) File(name string, mode fs.FileMode, size int64, content io.Reader) error {
	hdr := l.header(tar.TypeReg, name, mode)
	hdr.Size = size
	if err := l.w.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.Copy(l.w, content); err != nil {
		return err
	}
	l.Files++
	l.Bytes += size
	return nil
}

// Close ends the layer; it does not close the writer underneath.
func (l *SourceLayer) Close() error { return l.w.Close() }

func (l *SourceLayer) header(typeflag byte, name string, mode fs.FileMode) *tar.Header {
	return &tar.Header{Typeflag: typeflag, Name: name, Mode: int64(mode.Perm()), ModTime: SourceModTime}
}

// SourceImage is the package image of a layer written to layerFile: that one layer on an empty image,
// as the CF API stores bits.
func SourceImage(layerFile string) (v1.Image, error) {
	layer, err := tarball.LayerFromFile(layerFile)
	if err != nil {
		return nil, err
	}
	return mutate.AppendLayers(empty.Image, layer)
}

// SpaceKeychain is the registry credentials that the space's builds use: the Secrets that cf-hnc
// resolved for it (status.build.registryCredentials), which HNC copied into the space
// namespace, read with c, where a space developer may read them.
func SpaceKeychain(ctx context.Context, c client.Reader, space *cfv1alpha1.CFSpace) (authn.Keychain, error) {
	var secrets []corev1.Secret
	for _, ref := range space.Status.Build.SecretNames() {
		secret := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: space.Name, Name: ref.Name}, secret); err != nil {
			return nil, fmt.Errorf("reading the space's registry credentials, Secret %s: %w", ref.Name, err)
		}
		secrets = append(secrets, *secret)
	}
	return kauth.NewFromPullSecrets(ctx, secrets)
}

// PushPackage pushes img to the app's package repository in the space's repository
// (api/v1alpha1.PackageRepository), tagged with the package GUID, and returns its reference by
// digest, which a package names so that its bits cannot change.
func PushPackage(ctx context.Context, keychain authn.Keychain, img v1.Image, spaceRepository, appGUID, packageGUID string) (string, error) {
	tag, err := name.NewTag(cfv1alpha1.PackageRepository(spaceRepository, appGUID)+":"+packageGUID, name.WeakValidation)
	if err != nil {
		return "", fmt.Errorf("the package repository of the space: %w", err)
	}
	if err := remote.Write(tag, img, remote.WithAuthFromKeychain(keychain), remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("uploading the package to %s: %w", tag, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return tag.Context().Digest(digest.String()).String(), nil
}
