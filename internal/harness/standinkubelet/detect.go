package standinkubelet

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	kpackcorev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"

	"code.cloudfoundry.org/cf-hnc/internal/cnb"
)

// detected is what the detect and build phases settle on.
type detected struct {
	buildpacks       kpackcorev1alpha1.BuildpackMetadataList
	lifecycleVersion string
	// stackRunImage is the run image of the builder's stack, the lifecycle's stack.toml.
	stackRunImage string
}

// errNoGroup is the lifecycle's detect failure.
var errNoGroup = errors.New("No buildpack groups passed detection.")

// maxBuildpackNesting bounds the expansion of composite buildpacks.
const maxBuildpackNesting = 8

// builderLabels are the labels kpack writes on the builder images it creates.
type builderLabels struct {
	order  kpackcorev1alpha1.Order
	layers map[string]map[string]struct {
		Order       kpackcorev1alpha1.Order `json:"order"`
		Homepage    string                  `json:"homepage"`
		LayerDiffID string                  `json:"layerDiffID"`
	}
	metadata struct {
		Stack     stackMetadata `json:"stack"`
		Lifecycle struct {
			Version string `json:"version"`
		} `json:"lifecycle"`
	}
}

// DetectFilesName is the file, next to a synthetic buildpack's bin/detect, that lists the
// file patterns (path.Match, at the app's root, one per line) of the apps it detects; its
// bin/detect script reads it too. A buildpack without one detects every app.
const DetectFilesName = "detect-files"

// detect does what the lifecycle's detector does with the builder's order, running no
// buildpack: it tries each group in order, composite buildpacks expanded into each group of
// their own order, and takes the first group in which every non-optional buildpack detects
// (and at least one does); the group's buildpacks that detect are the result. A buildpack
// detects an app that has a file matching one of its detect patterns at its root (files), as
// the synthetic buildpacks' bin/detect scripts do.
func detect(builder v1.Image, files []string) (detected, error) {
	cfg, err := builder.ConfigFile()
	if err != nil {
		return detected{}, err
	}
	var labels builderLabels
	for key, into := range map[string]any{cnb.BuildpackOrderLabel: &labels.order, cnb.BuildpackLayersLabel: &labels.layers, cnb.BuilderMetadataLabel: &labels.metadata} {
		if err := unmarshalLabel(cfg.Config.Labels, key, into); err != nil {
			return detected{}, err
		}
	}
	for _, entry := range labels.order {
		groups, err := labels.expand(entry.Group, false, 0)
		if err != nil {
			return detected{}, err
		}
		for _, group := range groups {
			passed, ok, err := labels.detectGroup(builder, group, files)
			if err != nil {
				return detected{}, err
			}
			if ok {
				return detected{
					buildpacks:       passed,
					lifecycleVersion: labels.metadata.Lifecycle.Version,
					stackRunImage:    labels.metadata.Stack.RunImage.Image,
				}, nil
			}
		}
	}
	return detected{}, errNoGroup
}

// candidate is a buildpack of a group once composite buildpacks are expanded.
type candidate struct {
	ref      kpackcorev1alpha1.BuildpackRef
	optional bool
}

// expand turns a group into the groups the detector tries: each composite buildpack replaced
// by each group of its own order in turn, its buildpacks optional if it is.
func (l builderLabels) expand(group []kpackcorev1alpha1.BuildpackRef, optional bool, depth int) ([][]candidate, error) {
	if depth > maxBuildpackNesting {
		return nil, fmt.Errorf("composite buildpacks nested more than %d deep", maxBuildpackNesting)
	}
	groups := [][]candidate{nil}
	for _, ref := range group {
		alternatives := [][]candidate{{{ref: ref, optional: optional || ref.Optional}}}
		if order := l.layers[ref.Id][ref.Version].Order; len(order) > 0 {
			alternatives = nil
			for _, nested := range order {
				expanded, err := l.expand(nested.Group, optional || ref.Optional, depth+1)
				if err != nil {
					return nil, err
				}
				alternatives = append(alternatives, expanded...)
			}
		}
		var next [][]candidate
		for _, g := range groups {
			for _, alt := range alternatives {
				next = append(next, append(slices.Clone(g), alt...))
			}
		}
		groups = next
	}
	return groups, nil
}

// detectGroup runs detection for one group: the buildpacks that detect, and whether the group
// passes.
func (l builderLabels) detectGroup(builder v1.Image, group []candidate, files []string) (kpackcorev1alpha1.BuildpackMetadataList, bool, error) {
	var passed kpackcorev1alpha1.BuildpackMetadataList
	for _, c := range group {
		layer := l.layers[c.ref.Id][c.ref.Version]
		patterns, err := detectPatterns(builder, layer.LayerDiffID, c.ref.Id, c.ref.Version)
		if err != nil {
			return nil, false, err
		}
		switch {
		case detects(patterns, files):
			passed = append(passed, kpackcorev1alpha1.BuildpackMetadata{Id: c.ref.Id, Version: c.ref.Version, Homepage: layer.Homepage})
		case !c.optional:
			return nil, false, nil
		}
	}
	return passed, len(passed) > 0, nil
}

// detectPatterns reads a buildpack's detect patterns from its layer in the builder image; nil
// if it has none.
func detectPatterns(builder v1.Image, diffID, id, version string) ([]string, error) {
	hash, err := v1.NewHash(diffID)
	if err != nil {
		return nil, fmt.Errorf("buildpack %s@%s: layer %q: %w", id, version, diffID, err)
	}
	layer, err := builder.LayerByDiffID(hash)
	if err != nil {
		return nil, fmt.Errorf("buildpack %s@%s: %w", id, version, err)
	}
	rc, err := layer.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	want := path.Join("cnb/buildpacks", strings.ReplaceAll(id, "/", "_"), version, DetectFilesName)
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("buildpack %s@%s: reading its layer: %w", id, version, err)
		}
		if strings.TrimPrefix(path.Clean("/"+hdr.Name), "/") != want {
			continue
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		return strings.Fields(string(content)), nil
	}
}

// detects says whether an app with files at its root matches a buildpack's patterns; no
// patterns match every app.
func detects(patterns, files []string) bool {
	if patterns == nil {
		return true
	}
	return slices.ContainsFunc(patterns, func(pattern string) bool {
		return slices.ContainsFunc(files, func(f string) bool {
			matched, _ := path.Match(pattern, f)
			return matched
		})
	})
}

// procfileLine is a line of a Procfile: "<process type>: <command>".
var procfileLine = regexp.MustCompile(`^([A-Za-z0-9_-]+):\s*(.+)$`)

// processes are the launch processes that a Procfile buildpack contributes: one per Procfile
// line, run through a shell, attributed to the group's last buildpack (where a Procfile
// buildpack sits). "web" is the default process, as it is for the Procfile buildpack.
func processes(procfile []byte, buildpacks kpackcorev1alpha1.BuildpackMetadataList) ([]process, error) {
	var result []process
	for i, line := range strings.Split(string(procfile), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := procfileLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("Procfile line %d is not <process type>: <command>", i+1)
		}
		result = append(result, process{
			Type:        m[1],
			Command:     m[2],
			Default:     m[1] == "web",
			BuildpackID: buildpacks[len(buildpacks)-1].Id,
		})
	}
	return result, nil
}
