package standinkubelet

import (
	"archive/tar"
	"bytes"
	"cmp"
	"code.cloudfoundry.org/cf-hnc/internal/cnb"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// normalizedTime is the timestamp the lifecycle gives exported files and images, so that the
// same inputs export the same digest: a restarted stand-in pushes what it pushed before.
var normalizedTime = time.Date(1980, time.January, 1, 0, 0, 1, 0, time.UTC)

// appDir is the lifecycle's app directory, where the source lands in the app image.
const appDir = "workspace"

// appLayer is the app layer the exporter writes: the source image's files under /workspace
// (the part under subPath, if set), with normalized timestamps. It also returns the Procfile at
// the app's root, if there is one, and the names at the app's root, which detection reads.
func appLayer(source v1.Image, subPath string) (v1.Layer, []byte, []string, error) {
	subPath = strings.Trim(path.Clean("/"+subPath), "/")
	fs := mutate.Extract(source)
	defer fs.Close()

	var buf bytes.Buffer
	var procfile []byte
	var root []string
	tr := tar.NewReader(fs)
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: appDir + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: normalizedTime}); err != nil {
		return nil, nil, nil, err
	}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("reading the source image: %w", err)
		}
		rel, ok := withinApp(hdr.Name, subPath)
		if !ok {
			continue
		}
		if !strings.Contains(rel, "/") {
			root = append(root, rel)
		}
		var content io.Reader = tr
		if rel == "Procfile" && hdr.Typeflag == tar.TypeReg {
			if procfile, err = io.ReadAll(tr); err != nil {
				return nil, nil, nil, err
			}
			content = bytes.NewReader(procfile)
		}
		if err := copyIntoApp(tw, hdr, rel, subPath, content); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	})
	return layer, procfile, root, err
}

// copyIntoApp writes a source file at rel under the app directory.
func copyIntoApp(tw *tar.Writer, hdr *tar.Header, rel, subPath string, content io.Reader) error {
	out := &tar.Header{
		Typeflag: hdr.Typeflag,
		Name:     appDir + "/" + rel,
		Linkname: hdr.Linkname,
		Size:     hdr.Size,
		Mode:     hdr.Mode,
		Uid:      hdr.Uid,
		Gid:      hdr.Gid,
		ModTime:  normalizedTime,
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		out.Name += "/"
	case tar.TypeLink:
		// A hard link names a path in the archive, which moves with the files.
		linked, ok := withinApp(hdr.Linkname, subPath)
		if !ok {
			return nil
		}
		out.Linkname = appDir + "/" + linked
	}
	if err := tw.WriteHeader(out); err != nil {
		return err
	}
	_, err := io.Copy(tw, content)
	return err
}

// withinApp returns the path of a source file relative to the app directory, which is the
// source's subPath.
func withinApp(name, subPath string) (string, bool) {
	rel := strings.Trim(path.Clean("/"+name), "/")
	if subPath != "" {
		rest, ok := strings.CutPrefix(rel, subPath+"/")
		if !ok {
			return "", false
		}
		rel = rest
	}
	return rel, rel != ""
}

// export describes an app image as the lifecycle's exporter assembles it.
type export struct {
	run            v1.Image
	runImage       string // as the pod names it, by digest or tag
	app            v1.Layer
	detected       detected
	processes      []process
	defaultProcess string // the exporter's -process-type, empty for the buildpacks' default
	platformAPI    string
	source         name.Digest
}

// image assembles the app image: the run image, the app layer on top, and the lifecycle's
// configuration and labels.
func (e export) image() (v1.Image, error) {
	runImage, err := runImageOf(e.run, e.runImage)
	if err != nil {
		return nil, err
	}
	labels, defaultProcess, err := e.labels(runImage)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(e.run, mutate.Addendum{
		Layer:   e.app,
		History: v1.History{CreatedBy: "Buildpacks Application Layer", Created: v1.Time{Time: normalizedTime}},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	config := *cfg.Config.DeepCopy()
	// The run image's labels, io.buildpacks.stack.* among them, stay: the app image inherits them.
	config.Labels = maps.Clone(config.Labels)
	if config.Labels == nil {
		config.Labels = map[string]string{}
	}
	maps.Copy(config.Labels, labels)
	config.Env = append(config.Env, "CNB_LAYERS_DIR=/layers", "CNB_APP_DIR=/"+appDir, "CNB_PLATFORM_API="+e.platformAPI, "CNB_DEPRECATION_MODE=quiet")
	config.WorkingDir = "/" + appDir
	config.Entrypoint = []string{"/cnb/lifecycle/launcher"}
	if defaultProcess != "" {
		config.Entrypoint = []string{"/cnb/process/" + defaultProcess}
	}
	config.Cmd = nil
	if img, err = mutate.Config(img, config); err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: normalizedTime})
}

// labels are the labels the exporter writes, and the default process type among them.
func (e export) labels(runImage runImageForRebase) (map[string]string, string, error) {
	appDiffID, err := e.app.DiffID()
	if err != nil {
		return nil, "", err
	}
	defaultProcess, err := e.chooseDefault()
	if err != nil {
		return nil, "", err
	}
	runRef, err := name.ParseReference(e.runImage)
	if err != nil {
		return nil, "", err
	}
	lifecycle := lifecycleMetadata{App: []layerSHA{{SHA: appDiffID.String()}}, RunImage: runImage}
	lifecycle.Stack.RunImage.Image = cmp.Or(e.detected.stackRunImage, runRef.Context().Name())

	build := buildMetadata{Buildpacks: e.detected.buildpacks, Processes: slices.Clone(e.processes), DefaultProcessType: defaultProcess}
	build.Launcher.Version = e.detected.lifecycleVersion
	build.Launcher.Source.Git.Repository = "github.com/buildpacks/lifecycle"
	for i := range build.Processes {
		build.Processes[i].Default = build.Processes[i].Type == defaultProcess
	}

	var project projectMetadata
	project.Source.Type = "image"
	project.Source.Metadata = map[string]string{"image": e.source.Context().Name()}
	project.Source.Version = map[string]string{"digest": e.source.DigestStr()}

	labels := map[string]string{}
	for key, value := range map[string]any{cnb.LifecycleMetadataLabel: lifecycle, cnb.BuildMetadataLabel: build, cnb.ProjectMetadataLabel: project} {
		if err := setLabel(labels, key, value); err != nil {
			return nil, "", err
		}
	}
	return labels, defaultProcess, nil
}

// chooseDefault returns the default process type: the exporter's -process-type, which must
// exist, or else the one the buildpacks marked.
func (e export) chooseDefault() (string, error) {
	types := make([]string, 0, len(e.processes))
	marked := ""
	for _, p := range e.processes {
		types = append(types, p.Type)
		if p.Default {
			marked = p.Type
		}
	}
	if e.defaultProcess == "" {
		return marked, nil
	}
	if !slices.Contains(types, e.defaultProcess) {
		return "", fmt.Errorf("default process type %q not present in list %v", e.defaultProcess, types)
	}
	return e.defaultProcess, nil
}

// runImageOf is what the lifecycle records about the run image an app image is built on:
// its top layer, and its digest in the repository the pod names it by.
func runImageOf(run v1.Image, ref string) (runImageForRebase, error) {
	layers, err := run.Layers()
	if err != nil {
		return runImageForRebase{}, err
	}
	if len(layers) == 0 {
		return runImageForRebase{}, fmt.Errorf("run image %s has no layers", ref)
	}
	top, err := layers[len(layers)-1].DiffID()
	if err != nil {
		return runImageForRebase{}, err
	}
	digest, err := run.Digest()
	if err != nil {
		return runImageForRebase{}, err
	}
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return runImageForRebase{}, err
	}
	return runImageForRebase{TopLayer: top.String(), Reference: parsed.Context().Digest(digest.String()).Name()}, nil
}

// cacheImage is the registry cache the exporter writes for a Build with a registry cache. With
// no buildpack layers to cache, it is empty.
func cacheImage() (v1.Image, error) {
	return mutate.Config(empty.Image, v1.Config{Labels: map[string]string{cnb.CacheMetadataLabel: `{"buildpacks":[]}`}})
}
