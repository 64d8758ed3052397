package registry

import (
	"context"
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// publisherName is the account that publishes the synthetic CNB images over HTTP, like any
// other client, so that PushedBy and the request log show them too.
const publisherName = "cnb-publisher"

// What Seed publishes.
var (
	seedBuildpacks       = []string{"paketo-buildpacks/go", "paketo-buildpacks/java", "paketo-buildpacks/nodejs", "paketo-buildpacks/procfile"}
	seedBuildpackVersion = "1.0.0"
	seedLifecycleVersion = "0.20.0"
)

var (
	versionPattern     = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	buildpackIDPattern = regexp.MustCompile(`^` + repoPattern + `$`)
)

// Images are the synthetic CNB images that Seed publishes, for writing kpack's ClusterStack,
// ClusterLifecycle, ClusterStore and Builders. Anyone may pull them, without credentials.
type Images struct {
	Stack      Stack
	Lifecycle  Lifecycle
	Buildpacks []Buildpack
}

// Stack is a stack's build and run image; both carry the stack id.
type Stack struct {
	// ID is the stack id, the ClusterStack's spec.id.
	ID         string
	BuildImage Ref
	RunImage   Ref
}

// Lifecycle is a lifecycle image.
type Lifecycle struct {
	Version string
	Image   Ref
}

// Buildpack is a buildpackage that holds one buildpack.
type Buildpack struct {
	ID      string
	Version string
	Image   Ref
}

// Ref is a published image.
type Ref struct {
	// Tag is the image's reference by tag, e.g. "127.0.0.1:PORT/cnb/stack/run:latest".
	Tag string
	// Digest is the digest of the image that was published, e.g. "sha256:...".
	Digest string
}

// Pinned is the reference by digest, e.g. "127.0.0.1:PORT/cnb/stack/run@sha256:...", as kpack
// reports resolved images.
func (r Ref) Pinned() string {
	// Tag always has a tag part, so its last colon separates it (the host's colon comes first).
	return r.Tag[:strings.LastIndex(r.Tag, ":")] + "@" + r.Digest
}

// Seed publishes a stack, a lifecycle and buildpackages for paketo-buildpacks/go, java, nodejs
// and procfile, each at version 1.0.0. Publishing the same images again changes nothing.
//
// Repositories, under the public prefix: stack/build and stack/run (tag "latest"),
// lifecycle and buildpacks/<buildpack id> (tagged with the version).
func (r *Registry) Seed(ctx context.Context) (Images, error) {
	build, err := stackImage(stackID, true, 0)
	if err != nil {
		return Images{}, err
	}
	buildRef, err := r.push(ctx, "stack/build", "latest", build)
	if err != nil {
		return Images{}, err
	}
	r.mu.Lock()
	runRef, err := r.pushRunImage(ctx, r.runImagePatch)
	r.mu.Unlock()
	if err != nil {
		return Images{}, err
	}
	images := Images{Stack: Stack{ID: stackID, BuildImage: buildRef, RunImage: runRef}}

	if images.Lifecycle, err = r.PublishLifecycle(ctx, seedLifecycleVersion); err != nil {
		return Images{}, err
	}
	for _, id := range seedBuildpacks {
		bp, err := r.PublishBuildpack(ctx, id, seedBuildpackVersion)
		if err != nil {
			return Images{}, err
		}
		images.Buildpacks = append(images.Buildpacks, bp)
	}
	return images, nil
}

// PublishRunImage publishes a fixed run image, as a base image's CVE fix would: the same stack
// id and tag, a new base layer, a new digest. Earlier run images stay pullable by digest.
// kpack reads the tag again only when the ClusterStack is reconciled (for example after an
// annotation changed): it does not poll.
func (r *Registry) PublishRunImage(ctx context.Context) (Ref, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref, err := r.pushRunImage(ctx, r.runImagePatch+1)
	if err != nil {
		return Ref{}, err
	}
	r.runImagePatch++
	return ref, nil
}

// pushRunImage publishes the run image at a patch level; r.mu must be held.
func (r *Registry) pushRunImage(ctx context.Context, patch int) (Ref, error) {
	img, err := stackImage(stackID, false, patch)
	if err != nil {
		return Ref{}, err
	}
	return r.push(ctx, "stack/run", "latest", img)
}

// PublishStack publishes the build and run image of another stack, with its own stack id, as
// an operator publishes a new stack to migrate to (a new OS release, say). The images go to
// stacks/<id>/build and stacks/<id>/run (tag "latest"). An app image built on one stack cannot
// be rebased onto the other: the rebaser refuses a different stack id.
func (r *Registry) PublishStack(ctx context.Context, id string) (Stack, error) {
	if !buildpackIDPattern.MatchString(id) {
		return Stack{}, fmt.Errorf("stack id %q is not a repository path", id)
	}
	stack := Stack{ID: id}
	for _, build := range []bool{true, false} {
		img, err := stackImage(id, build, 0)
		if err != nil {
			return Stack{}, err
		}
		repo, ref := "stacks/"+id+"/run", &stack.RunImage
		if build {
			repo, ref = "stacks/"+id+"/build", &stack.BuildImage
		}
		if *ref, err = r.push(ctx, repo, "latest", img); err != nil {
			return Stack{}, err
		}
	}
	return stack, nil
}

// PublishBuildpack publishes a buildpackage holding buildpack id at version (MAJOR.MINOR.PATCH),
// tagged with the version: a new buildpack, or a new version of one. Its Image.Tag is the
// source to add to a ClusterStore.
func (r *Registry) PublishBuildpack(ctx context.Context, id, version string) (Buildpack, error) {
	if !buildpackIDPattern.MatchString(id) {
		return Buildpack{}, fmt.Errorf("buildpack id %q is not a repository path", id)
	}
	if !versionPattern.MatchString(version) {
		return Buildpack{}, fmt.Errorf("buildpack version %q is not MAJOR.MINOR.PATCH", version)
	}
	img, err := buildpackageImage(id, version)
	if err != nil {
		return Buildpack{}, err
	}
	ref, err := r.push(ctx, "buildpacks/"+id, version, img)
	if err != nil {
		return Buildpack{}, err
	}
	return Buildpack{ID: id, Version: version, Image: ref}, nil
}

// PublishLifecycle publishes a lifecycle image of version (MAJOR.MINOR.PATCH), tagged with the
// version. Its Image.Tag is the ClusterLifecycle's spec.image.
func (r *Registry) PublishLifecycle(ctx context.Context, version string) (Lifecycle, error) {
	if !versionPattern.MatchString(version) {
		return Lifecycle{}, fmt.Errorf("lifecycle version %q is not MAJOR.MINOR.PATCH", version)
	}
	img, err := lifecycleImage(version)
	if err != nil {
		return Lifecycle{}, err
	}
	ref, err := r.push(ctx, "lifecycle", version, img)
	if err != nil {
		return Lifecycle{}, err
	}
	return Lifecycle{Version: version, Image: ref}, nil
}

// push publishes img as repo:tag under the public prefix, with the publisher's credentials.
func (r *Registry) push(ctx context.Context, repo, tag string, img v1.Image) (Ref, error) {
	ref, err := name.NewTag(r.host + "/" + r.gate.publicPrefix + repo + ":" + tag)
	if err != nil {
		return Ref{}, err
	}
	if err := remote.Write(ref, img, remote.WithAuth(r.publisher), remote.WithContext(ctx)); err != nil {
		return Ref{}, fmt.Errorf("publishing %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return Ref{}, err
	}
	return Ref{Tag: ref.Name(), Digest: digest.String()}, nil
}

// newPublisher is the publisher's account, with a fresh random password.
func newPublisher(publicPrefix string) User {
	return User{Name: publisherName, Password: rand.Text(), Prefixes: []string{publicPrefix}}
}
