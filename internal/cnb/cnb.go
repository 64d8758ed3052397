// Package cnb names the image labels of the Cloud Native Buildpacks platform that cf-hnc and
// its test harness read and write, and reads the processes a droplet declares. The lifecycle
// writes the app image labels and kpack reads them; kpack writes the builder image labels.
package cnb

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Labels of app (droplet) images.
const (
	StackIDLabel           = "io.buildpacks.stack.id"
	StackLabelPrefix       = "io.buildpacks.stack."
	BuildMetadataLabel     = "io.buildpacks.build.metadata"
	LifecycleMetadataLabel = "io.buildpacks.lifecycle.metadata"
	ProjectMetadataLabel   = "io.buildpacks.project.metadata"
	CacheMetadataLabel     = "io.buildpacks.lifecycle.cache.metadata"
)

// Labels of builder, lifecycle and buildpack images.
const (
	BuilderMetadataLabel      = "io.buildpacks.builder.metadata"
	BuildpackOrderLabel       = "io.buildpacks.buildpack.order"
	BuildpackLayersLabel      = "io.buildpacks.buildpack.layers"
	BuildpackageMetadataLabel = "io.buildpacks.buildpackage.metadata"
	LifecycleAPIsLabel        = "io.buildpacks.lifecycle.apis"
	LifecycleVersionLabel     = "io.buildpacks.lifecycle.version"
)

// Process is a process type of a droplet and the command that starts it.
type Process struct {
	Type    string
	Command string
}

// Processes reads the processes of a droplet's build metadata label. Platform API 0.10 made a
// process's command a list; earlier ones have a string and separate args.
func Processes(buildMetadata string) ([]Process, error) {
	var metadata struct {
		Processes []struct {
			Type    string          `json:"type"`
			Command json.RawMessage `json:"command"`
			Args    []string        `json:"args"`
		} `json:"processes"`
	}
	if buildMetadata == "" {
		return nil, fmt.Errorf("the droplet has no %s label", BuildMetadataLabel)
	}
	if err := json.Unmarshal([]byte(buildMetadata), &metadata); err != nil {
		return nil, fmt.Errorf("%s: %w", BuildMetadataLabel, err)
	}
	processes := make([]Process, 0, len(metadata.Processes))
	for _, p := range metadata.Processes {
		var command []string
		if err := json.Unmarshal(p.Command, &command); err != nil {
			var single string
			if err := json.Unmarshal(p.Command, &single); err != nil {
				return nil, fmt.Errorf("%s: process %q: command is neither a string nor a list", BuildMetadataLabel, p.Type)
			}
			command = []string{single}
		}
		processes = append(processes, Process{Type: p.Type, Command: strings.Join(append(command, p.Args...), " ")})
	}
	return processes, nil
}
