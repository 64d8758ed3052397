package staging

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cnb"
)

// DropletReader reads what a droplet image declares about its processes. It is the one
// collaborator of the reconcilers that is not Kubernetes.
type DropletReader interface {
	ProcessTypes(ctx context.Context, image string, keychain authn.Keychain) ([]cfv1alpha1.ProcessType, error)
}

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
	processes, err := cnb.Processes(config.Config.Labels[cnb.BuildMetadataLabel])
	if err != nil {
		return nil, fmt.Errorf("reading droplet %s: %w", image, err)
	}
	types := make([]cfv1alpha1.ProcessType, len(processes))
	for i, p := range processes {
		types[i] = cfv1alpha1.ProcessType{Type: p.Type, Command: p.Command}
	}
	return types, nil
}
