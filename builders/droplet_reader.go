package builders

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// DropletReader reads what a droplet image declares about its processes. It is the one
// collaborator of the reconcilers that is not Kubernetes.
type DropletReader interface {
	ProcessTypes(ctx context.Context, image string, keychain authn.Keychain) ([]cfv1alpha1.ProcessType, error)
}

// buildMetadataLabel is where the buildpack lifecycle records a built image's processes.
const buildMetadataLabel = "io.buildpacks.build.metadata"

// RegistryDropletReader reads droplets from their registry.
type RegistryDropletReader struct{}

var _ DropletReader = RegistryDropletReader{}

// ProcessTypes returns the processes of the lifecycle's build metadata label.
func (RegistryDropletReader) ProcessTypes(ctx context.Context, image string, keychain authn.Keychain) ([]cfv1alpha1.ProcessType, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain))
	if err != nil {
		return nil, fmt.Errorf("reading droplet %s: %w", image, err)
	}
	config, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading droplet %s: %w", image, err)
	}
	return processTypes(config.Config.Labels[buildMetadataLabel])
}

// processTypes parses the processes of build metadata. Platform API 0.10 made a process's
// command a list; earlier ones have a string and separate args.
func processTypes(label string) ([]cfv1alpha1.ProcessType, error) {
	var metadata struct {
		Processes []struct {
			Type    string          `json:"type"`
			Command json.RawMessage `json:"command"`
			Args    []string        `json:"args"`
		} `json:"processes"`
	}
	if label == "" {
		return nil, fmt.Errorf("the droplet has no %s label", buildMetadataLabel)
	}
	if err := json.Unmarshal([]byte(label), &metadata); err != nil {
		return nil, fmt.Errorf("%s: %w", buildMetadataLabel, err)
	}
	processes := make([]cfv1alpha1.ProcessType, 0, len(metadata.Processes))
	for _, p := range metadata.Processes {
		var command []string
		if err := json.Unmarshal(p.Command, &command); err != nil {
			var single string
			if err := json.Unmarshal(p.Command, &single); err != nil {
				return nil, fmt.Errorf("%s: process %q: command is neither a string nor a list", buildMetadataLabel, p.Type)
			}
			command = []string{single}
		}
		processes = append(processes, cfv1alpha1.ProcessType{Type: p.Type, Command: strings.Join(append(command, p.Args...), " ")})
	}
	return processes, nil
}
