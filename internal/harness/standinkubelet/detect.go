package standinkubelet

import (
	"code.cloudfoundry.org/cf-hnc/internal/cnb"
	"errors"
	"fmt"
	"regexp"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	kpackcorev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
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
		Order    kpackcorev1alpha1.Order `json:"order"`
		Homepage string                  `json:"homepage"`
	}
	metadata struct {
		Stack     stackMetadata `json:"stack"`
		Lifecycle struct {
			Version string `json:"version"`
		} `json:"lifecycle"`
	}
}

// detect reads the builder image the way the lifecycle's detector reads the builder's order,
// but, running no buildpacks, takes the first group, every buildpack in it passing. Composite
// buildpacks are replaced by the first group of their own order, as the detector does.
func detect(builder v1.Image) (detected, error) {
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
	if len(labels.order) == 0 {
		return detected{}, errNoGroup
	}
	buildpacks, err := labels.expand(labels.order[0].Group, 0)
	if err != nil {
		return detected{}, err
	}
	if len(buildpacks) == 0 {
		return detected{}, errNoGroup
	}
	return detected{
		buildpacks:       buildpacks,
		lifecycleVersion: labels.metadata.Lifecycle.Version,
		stackRunImage:    labels.metadata.Stack.RunImage.Image,
	}, nil
}

// expand lists the buildpacks of a group, those of composite buildpacks in their place.
func (l builderLabels) expand(group []kpackcorev1alpha1.BuildpackRef, depth int) (kpackcorev1alpha1.BuildpackMetadataList, error) {
	if depth > maxBuildpackNesting {
		return nil, fmt.Errorf("composite buildpacks nested more than %d deep", maxBuildpackNesting)
	}
	var buildpacks kpackcorev1alpha1.BuildpackMetadataList
	for _, ref := range group {
		layer := l.layers[ref.Id][ref.Version]
		if len(layer.Order) == 0 {
			buildpacks = append(buildpacks, kpackcorev1alpha1.BuildpackMetadata{Id: ref.Id, Version: ref.Version, Homepage: layer.Homepage})
			continue
		}
		nested, err := l.expand(layer.Order[0].Group, depth+1)
		if err != nil {
			return nil, err
		}
		buildpacks = append(buildpacks, nested...)
	}
	return buildpacks, nil
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
