package registry

import (
	"fmt"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"code.cloudfoundry.org/cf-hnc/internal/cnb"
	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
)

// A buildpackage holds one of cf-hnc's buildpacks (package buildpacks) at a version, with what
// kpack v0.18 reads of it (pkg/cnb/remote_store_reader.go, buildpack_resolver.go):
// io.buildpacks.buildpack.layers maps id -> version -> {api, stacks, layerDiffID}, and
// layerDiffID names the layer that holds the buildpack's directory,
// /cnb/buildpacks/<id with "/" as "_">/<version>; io.buildpacks.buildpackage.metadata is
// written too, as pack writes it.

// buildpackageImage is the buildpackage of buildpack id at version. The version lives only in
// buildpack.toml: every version holds the same programs.
func buildpackageImage(src Sources, id, version string) (v1.Image, error) {
	descriptor, err := buildpacks.BuildpackTOML(id, version)
	if err != nil {
		return nil, err
	}
	bpDir := path.Join("cnb/buildpacks", strings.ReplaceAll(id, "/", "_"), version)
	program, err := hostFile(bpDir+"/bin/detect", 0o755, src.Buildpack)
	if err != nil {
		return nil, fmt.Errorf("buildpack %s: %w", id, err)
	}
	entries := []tarEntry{
		dir("cnb", 0o755, 0),
		dir("cnb/buildpacks", 0o755, 0),
		dir(path.Dir(bpDir), 0o755, 0),
		dir(bpDir, 0o755, 0),
		file(bpDir+"/buildpack.toml", 0o644, descriptor),
		dir(bpDir+"/bin", 0o755, 0),
		program,
		symlink(bpDir+"/bin/build", "detect"),
	}
	if id == buildpacks.StaticfileID {
		server, err := hostFile(bpDir+"/bin/"+buildpacks.StaticfileServer, 0o755, src.StaticfileServer)
		if err != nil {
			return nil, fmt.Errorf("buildpack %s: %w", id, err)
		}
		entries = append(entries, server)
	}
	layer, err := tarLayer(entries...)
	if err != nil {
		return nil, err
	}
	diffID, err := layer.DiffID()
	if err != nil {
		return nil, err
	}
	anyStack := []buildpackStack{{ID: "*"}}
	labels, err := jsonLabels(map[string]any{
		cnb.BuildpackLayersLabel: map[string]map[string]buildpackLayerInfo{
			id: {version: {API: buildpacks.API, Stacks: anyStack, LayerDiffID: diffID.String()}},
		},
		cnb.BuildpackageMetadataLabel: buildpackageMetadata{ID: id, Version: version, Stacks: anyStack},
	})
	if err != nil {
		return nil, err
	}
	return newImage([]v1.Layer{layer}, func(c *v1.Config) {
		for k, v := range labels {
			c.Labels[k] = v
		}
	})
}

// Label contents, with the JSON names that kpack and pack use.
type (
	buildpackStack struct {
		ID string `json:"id"`
	}
	buildpackLayerInfo struct {
		API         string           `json:"api"`
		Stacks      []buildpackStack `json:"stacks,omitempty"`
		LayerDiffID string           `json:"layerDiffID"`
	}
	buildpackageMetadata struct {
		ID      string           `json:"id"`
		Version string           `json:"version"`
		Stacks  []buildpackStack `json:"stacks,omitempty"`
	}
)
