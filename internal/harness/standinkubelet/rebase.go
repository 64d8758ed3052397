package standinkubelet

import (
	"code.cloudfoundry.org/cf-hnc/internal/cnb"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// rebase does what the lifecycle's rebaser does: the app image's layers above its run image's
// top layer are put on the new run image, whose io.buildpacks.stack.* labels replace the old
// ones, and the lifecycle metadata names the new run image. runImage is the new run image as
// the pod names it.
func rebase(app, run v1.Image, runImage string) (v1.Image, error) {
	appCfg, err := app.ConfigFile()
	if err != nil {
		return nil, err
	}
	runCfg, err := run.ConfigFile()
	if err != nil {
		return nil, err
	}
	appStack, runStack := appCfg.Config.Labels[cnb.StackIDLabel], runCfg.Config.Labels[cnb.StackIDLabel]
	switch {
	case appStack == "":
		return nil, errors.New("stack not defined on app image")
	case runStack == "":
		return nil, errors.New("stack not defined on new base image")
	case appStack != runStack:
		return nil, fmt.Errorf("incompatible stack: '%s' is not compatible with '%s'", runStack, appStack)
	}
	var lifecycle lifecycleMetadata
	if err := unmarshalLabel(appCfg.Config.Labels, cnb.LifecycleMetadataLabel, &lifecycle); err != nil {
		return nil, fmt.Errorf("get image metadata: %w", err)
	}
	own, err := layersAbove(app, appCfg, lifecycle.RunImage.TopLayer)
	if err != nil {
		return nil, fmt.Errorf("rebase app image: %w", err)
	}
	if lifecycle.RunImage, err = runImageOf(run, runImage); err != nil {
		return nil, err
	}

	config := *appCfg.Config.DeepCopy()
	config.Labels = maps.Clone(config.Labels)
	isStackLabel := func(key, _ string) bool { return strings.HasPrefix(key, cnb.StackLabelPrefix) }
	maps.DeleteFunc(config.Labels, isStackLabel)
	for key, value := range runCfg.Config.Labels {
		if isStackLabel(key, value) {
			config.Labels[key] = value
		}
	}
	if err := setLabel(config.Labels, cnb.LifecycleMetadataLabel, lifecycle); err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(run, own...)
	if err != nil {
		return nil, err
	}
	if img, err = mutate.Config(img, config); err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, appCfg.Created)
}

// layersAbove returns the layers of an image above the one with the given diff ID.
func layersAbove(img v1.Image, cfg *v1.ConfigFile, diffID string) ([]v1.Layer, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	top := slices.IndexFunc(cfg.RootFS.DiffIDs, func(h v1.Hash) bool { return h.String() == diffID })
	if top < 0 {
		return nil, fmt.Errorf("top layer %q of the previous run image is not in the app image", diffID)
	}
	return layers[top+1:], nil
}
