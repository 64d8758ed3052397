package e2e_test

import (
	"context"
	"encoding/json"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/cnb"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

// update changes obj as a user would.
func update(ctx context.Context, obj client.Object, change func()) {
	GinkgoHelper()
	testenv.Update(ctx, k8s, obj, change)
}

// events returns the events about obj.
func events(ctx SpecContext, obj client.Object) func() []eventsv1.Event {
	return func() []eventsv1.Event {
		list := &eventsv1.EventList{}
		Expect(k8s.List(ctx, list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
		var about []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.UID == obj.GetUID() {
				about = append(about, e)
			}
		}
		return about
	}
}

// BeNotFound matches a NotFound error.
func BeNotFound() OmegaMatcher {
	return WithTransform(apierrors.IsNotFound, BeTrue())
}

// droplet reads a droplet image as the org's registry account.
func droplet(image, org string) v1.Image {
	GinkgoHelper()
	user, password := registryCredentials(org)
	ref, err := name.ParseReference(image)
	Expect(err).NotTo(HaveOccurred())
	img, err := remote.Image(ref, remote.WithAuth(&authn.Basic{Username: user, Password: password}))
	Expect(err).NotTo(HaveOccurred())
	return img
}

// dropletMetadata is what the CNB lifecycle's exporter (and its rebaser) wrote into a droplet's
// label io.buildpacks.lifecycle.metadata.
type dropletMetadata struct {
	RunImage struct {
		TopLayer  string `json:"topLayer"`
		Reference string `json:"reference"`
	} `json:"runImage"`
	Stack struct {
		RunImage struct {
			Image string `json:"image"`
		} `json:"runImage"`
	} `json:"stack"`
	Buildpacks []struct {
		Key     string `json:"key"`
		Version string `json:"version"`
	} `json:"buildpacks"`
}

// lifecycleMetadata reads what the lifecycle wrote into a droplet.
func lifecycleMetadata(image, org string) dropletMetadata {
	GinkgoHelper()
	cfg, err := droplet(image, org).ConfigFile()
	Expect(err).NotTo(HaveOccurred())
	label := cfg.Config.Labels[cnb.LifecycleMetadataLabel]
	Expect(label).NotTo(BeEmpty(), "the droplet %s has no %s label", image, cnb.LifecycleMetadataLabel)
	var metadata dropletMetadata
	Expect(json.Unmarshal([]byte(label), &metadata)).To(Succeed())
	return metadata
}

// splitDroplet splits a droplet's layers into those of the run image it sits on (the one the
// lifecycle recorded) and the app's own layers above them.
func splitDroplet(image, org string) (runLayers, appLayers []string) {
	GinkgoHelper()
	layers := layerDigests(droplet(image, org))
	runImage := layerDigests(droplet(lifecycleMetadata(image, org).RunImage.Reference, org))
	Expect(len(layers)).To(BeNumerically(">", len(runImage)))
	Expect(layers[:len(runImage)]).To(Equal(runImage), "the droplet %s starts with its run image's layers", image)
	return layers[:len(runImage)], layers[len(runImage):]
}

// layerDigests are the digests of an image's layers, in order.
func layerDigests(img v1.Image) []string {
	GinkgoHelper()
	layers, err := img.Layers()
	Expect(err).NotTo(HaveOccurred())
	digests := make([]string, len(layers))
	for i, l := range layers {
		d, err := l.Digest()
		Expect(err).NotTo(HaveOccurred())
		digests[i] = d.String()
	}
	return digests
}

// digestOf is the digest of a pinned image reference.
func digestOf(ref string) string {
	GinkgoHelper()
	digest, err := name.NewDigest(ref)
	Expect(err).NotTo(HaveOccurred())
	return digest.DigestStr()
}
