package registry

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Sources are the programs and images the seeded images are made of. `make tools` builds
// them from their pinned modules (hack/tools.sh) and the local control plane builds cf-hnc's
// buildpacks; the stacks' shell comes from a Debian package.
type Sources struct {
	// LifecycleImage is an OCI image layout holding the CNB lifecycle's image, "lifecycle".
	LifecycleImage string
	// KpackImages is an OCI image layout holding kpack's build-init, build-waiter, completion
	// and rebase images.
	KpackImages string
	// Pause is Kubernetes' pause program, static: every pod's sandbox runs it.
	Pause string
	// Buildpack is cf-hnc's buildpack program (bin/detect and bin/build of every buildpack),
	// and StaticfileServer the web server that the staticfile buildpack puts into droplets.
	Buildpack, StaticfileServer string
	// Shell is a static busybox: the stacks' /bin/sh and tools.
	Shell string
}

// kpackImageNames are the images of kpack's that its controller names in build pods.
var kpackImageNames = []string{"build-init", "build-waiter", "completion", "rebase"}

// layoutImage is the image called name (annotation org.opencontainers.image.ref.name) in the
// OCI image layout at dir, or with name empty the layout's only image.
func layoutImage(dir, name string) (v1.Image, error) {
	path, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the image layout %s: %w (run `make tools`)", dir, err)
	}
	index, err := path.ImageIndex()
	if err != nil {
		return nil, err
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	if name == "" {
		if len(manifest.Manifests) != 1 {
			return nil, fmt.Errorf("the image layout %s holds %d images, not one", dir, len(manifest.Manifests))
		}
		return index.Image(manifest.Manifests[0].Digest)
	}
	for _, desc := range manifest.Manifests {
		if desc.Annotations["org.opencontainers.image.ref.name"] == name {
			return index.Image(desc.Digest)
		}
	}
	return nil, fmt.Errorf("the image layout %s has no image %q (run `make tools`)", dir, name)
}

// pauseImage runs Kubernetes' pause program as nobody, as registry.k8s.io/pause does.
func pauseImage(pause string) (v1.Image, error) {
	program, err := hostFile("pause", 0o755, pause)
	if err != nil {
		return nil, fmt.Errorf("the pause image: %w (run `make tools`)", err)
	}
	layer, err := tarLayer(program)
	if err != nil {
		return nil, err
	}
	return newImage([]v1.Layer{layer}, func(c *v1.Config) {
		c.Entrypoint = []string{"/pause"}
		c.User = "65535:65535"
	})
}
