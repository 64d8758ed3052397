package standinkubelet

import (
	"bytes"
	"code.cloudfoundry.org/cf-hnc/internal/cnb"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	kpackcorev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
)

// lifecycleMetadata is the part of io.buildpacks.lifecycle.metadata that the rebaser and kpack
// read (the lifecycle's files.LayersMetadata).
type lifecycleMetadata struct {
	App      []layerSHA        `json:"app"`
	RunImage runImageForRebase `json:"runImage"`
	Stack    stackMetadata     `json:"stack"`
}

type layerSHA struct {
	SHA string `json:"sha"`
}

// runImageForRebase names the run image an app image was built on, and its top layer: the
// layers above it are the app's own.
type runImageForRebase struct {
	TopLayer  string `json:"topLayer"`
	Reference string `json:"reference"`
}

type stackMetadata struct {
	RunImage struct {
		Image string `json:"image"`
	} `json:"runImage"`
}

// buildMetadata is io.buildpacks.build.metadata (the lifecycle's files.BuildMetadata): what
// kpack reports as the Build's buildpacks, and Cloud Foundry as the droplet's process types.
type buildMetadata struct {
	Buildpacks         kpackcorev1alpha1.BuildpackMetadataList `json:"buildpacks"`
	Launcher           launcherMetadata                        `json:"launcher"`
	Processes          []process                               `json:"processes"`
	DefaultProcessType string                                  `json:"buildpack-default-process-type,omitempty"`
}

type launcherMetadata struct {
	Version string `json:"version"`
	Source  struct {
		Git struct {
			Repository string `json:"repository"`
			Commit     string `json:"commit"`
		} `json:"git"`
	} `json:"source"`
}

// process is a launch process (the lifecycle's launch.Process). Its command is a string, as
// in platform APIs before 0.10; kpack v0.18 supports up to 0.9.
type process struct {
	Type        string   `json:"type"`
	Command     string   `json:"command"`
	Args        []string `json:"args"`
	Direct      bool     `json:"direct"`
	Default     bool     `json:"default,omitempty"`
	BuildpackID string   `json:"buildpackID"`
}

// projectMetadata is io.buildpacks.project.metadata as written for a registry image source.
type projectMetadata struct {
	Source struct {
		Type     string            `json:"type"`
		Metadata map[string]string `json:"metadata"`
		Version  map[string]string `json:"version"`
	} `json:"source"`
}

// kpackBuildMetadata is kpack's cnb.BuildMetadata, field for field: the completion container's
// termination message carries it.
type kpackBuildMetadata struct {
	BuildpackMetadata kpackcorev1alpha1.BuildpackMetadataList `json:"buildpackMetadata"`
	LatestCacheImage  string                                  `json:"latestCacheImage"`
	LatestImage       string                                  `json:"latestImage"`
	StackID           string                                  `json:"stackID"`
	StackRunImage     string                                  `json:"stackRunImage"`
	LifecycleVersion  string                                  `json:"lifecycleVersion"`
}

// maxTerminationMessage is the size limit of a container's termination message, which kpack's
// cnb.CompressBuildMetadata enforces too.
const maxTerminationMessage = 4096

// encode returns the termination message of kpack's completion binary: the JSON, gzipped, in
// standard base64 (cnb.CompressBuildMetadata, read back by cnb.DecompressBuildMetadata).
func (m kpackBuildMetadata) encode() (string, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	if _, err := gz.Write(data); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	message := base64.StdEncoding.EncodeToString(b.Bytes())
	if len(message) > maxTerminationMessage {
		return "", fmt.Errorf("compressed build metadata is %d bytes, more than the %d of a termination message", len(message), maxTerminationMessage)
	}
	return message, nil
}

// readBuildMetadata reads an app image the way kpack's completion binary does
// (cnb.RemoteMetadataRetriever): identifier is the image's <repository>@<digest>.
func readBuildMetadata(img v1.Image, identifier string) (kpackBuildMetadata, error) {
	cfg, err := img.ConfigFile()
	if err != nil {
		return kpackBuildMetadata{}, err
	}
	labels := cfg.Config.Labels
	stackID := labels[cnb.StackIDLabel]
	if stackID == "" {
		// kpack would report an empty Build status for such an image; fail instead.
		return kpackBuildMetadata{}, fmt.Errorf("image %s has no %s label", identifier, cnb.StackIDLabel)
	}
	var build buildMetadata
	if err := unmarshalLabel(labels, cnb.BuildMetadataLabel, &build); err != nil {
		return kpackBuildMetadata{}, err
	}
	var layers lifecycleMetadata
	if err := unmarshalLabel(labels, cnb.LifecycleMetadataLabel, &layers); err != nil {
		return kpackBuildMetadata{}, err
	}
	runImage, err := name.ParseReference(layers.RunImage.Reference)
	if err != nil {
		return kpackBuildMetadata{}, err
	}
	stackRunImage, err := name.ParseReference(layers.Stack.RunImage.Image)
	if err != nil {
		return kpackBuildMetadata{}, err
	}
	return kpackBuildMetadata{
		BuildpackMetadata: build.Buildpacks,
		LatestImage:       identifier,
		StackID:           stackID,
		StackRunImage:     stackRunImage.Context().String() + "@" + runImage.Identifier(),
		LifecycleVersion:  build.Launcher.Version,
	}, nil
}

func unmarshalLabel(labels map[string]string, key string, into any) error {
	value, ok := labels[key]
	if !ok {
		return fmt.Errorf("no %s label", key)
	}
	if err := json.Unmarshal([]byte(value), into); err != nil {
		return fmt.Errorf("label %s: %w", key, err)
	}
	return nil
}

func setLabel(labels map[string]string, key string, value any) error {
	data, err := json.Marshal(value)
	if err != nil {
		return err
	}
	labels[key] = string(data)
	return nil
}
