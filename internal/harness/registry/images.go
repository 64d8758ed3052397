package registry

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The images assembled here (stacks, buildpackages, pause) are pure functions of their inputs,
// so that the same inputs always give the same digests and an upgrade always gives new ones.

// fileTime is the fixed modification time of every file, as pack and kpack use it.
var fileTime = time.Date(1980, time.January, 1, 0, 0, 1, 0, time.UTC)

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
	body   []byte
}

func dir(name string, mode int64, owner int) tarEntry {
	return tarEntry{header: tar.Header{Typeflag: tar.TypeDir, Name: "/" + name, Mode: mode, Uid: owner, Gid: owner}}
}

func file(name string, mode int64, body []byte) tarEntry {
	return tarEntry{header: tar.Header{Typeflag: tar.TypeReg, Name: "/" + name, Mode: mode, Size: int64(len(body))}, body: body}
}

func symlink(name, target string) tarEntry {
	return tarEntry{header: tar.Header{Typeflag: tar.TypeSymlink, Name: "/" + name, Linkname: target, Mode: 0o777}}
}

// hostFile is a file of the layer with the content of a file of this machine.
func hostFile(name string, mode int64, path string) (tarEntry, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return tarEntry{}, err
	}
	return file(name, mode, body), nil
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
		if _, err := tw.Write(e.body); err != nil {
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
