package staging

import (
	"context"
	"errors"
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
	// ProcessTypes returns the droplet's process types; an error that wraps ErrDropletInvalid
	// if the droplet is beyond what cf-hnc reads, which reading again does not change.
	ProcessTypes(ctx context.Context, image string, keychain authn.Keychain) ([]cfv1alpha1.ProcessType, error)
}

// ErrDropletInvalid is a droplet that cf-hnc does not read, or whose process list it does not
// take: its build fails (DropletInvalidReason).
var ErrDropletInvalid = errors.New("cf-hnc takes no droplet beyond its bounds")

// MaxDropletConfigBytes bounds the image configuration of a droplet that the manager fetches.
// The lifecycle writes a few kilobytes of metadata there; a tenant's build step, which runs
// with the lifecycle's rights, can make it as large as the registry takes, and eight builds
// reconcile at once.
const MaxDropletConfigBytes = 1 << 20

// RegistryDropletReader reads droplets from their registry.
type RegistryDropletReader struct{}

var _ DropletReader = RegistryDropletReader{}

// ProcessTypes returns the processes of the lifecycle's build metadata label, within the bounds
// of cfv1alpha1.ValidateProcessTypes, from a configuration of at most MaxDropletConfigBytes: the
// manifest says its size, and the configuration is not fetched beyond it (go-containerregistry
// reads no more than the size the manifest gives, and checks the digest).
func (RegistryDropletReader) ProcessTypes(ctx context.Context, image string, keychain authn.Keychain) ([]cfv1alpha1.ProcessType, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain))
	if err != nil {
		return nil, fmt.Errorf("reading droplet %s: %w", image, err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading droplet %s: %w", image, err)
	}
	if size := manifest.Config.Size; size > MaxDropletConfigBytes {
		return nil, fmt.Errorf("%w: its image configuration has %d bytes; cf-hnc reads at most %d", ErrDropletInvalid, size, MaxDropletConfigBytes)
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
	if invalid := cfv1alpha1.ValidateProcessTypes(types); invalid != "" {
		return nil, fmt.Errorf("%w: %s", ErrDropletInvalid, invalid)
	}
	return types, nil
}
