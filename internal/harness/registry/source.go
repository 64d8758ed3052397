package registry

import (
	"archive/tar"
	"context"
	"maps"
	"slices"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// PushSource pushes an app's source files, as the CF API pushes uploaded bits: one layer, with
// the files at its root, to repo under the registry's host, with the account of user. It
// returns the image's reference.
func (r *Registry) PushSource(ctx context.Context, repo string, files map[string]string, user, password string) (string, error) {
	entries := make([]tarEntry, 0, len(files))
	for _, file := range slices.Sorted(maps.Keys(files)) {
		body := files[file]
		entries = append(entries, tarEntry{header: tar.Header{Typeflag: tar.TypeReg, Name: file, Mode: 0o644, Size: int64(len(body))}, body: []byte(body)})
	}
	layer, err := tarLayer(entries...)
	if err != nil {
		return "", err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return "", err
	}
	ref, err := name.ParseReference(r.host + "/" + repo)
	if err != nil {
		return "", err
	}
	auth := &authn.Basic{Username: user, Password: password}
	return ref.String(), remote.Write(ref, img, remote.WithAuth(auth), remote.WithContext(ctx))
}
