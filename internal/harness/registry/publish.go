package registry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"code.cloudfoundry.org/cf-hnc/internal/cnb"
	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
)

// publisherName is the account that publishes the seeded images over HTTP, like any other
// client, so that PushedBy and the request log show them too.
const publisherName = "cnb-publisher"

// What Seed publishes: cf-hnc's buildpacks in Cloud Foundry's detection order, at this version.
const seedBuildpackVersion = "1.0.0"

var (
	versionPattern     = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	buildpackIDPattern = regexp.MustCompile(`^` + repoPattern + `$`)
)

// Images are the images that Seed publishes: for kpack's ClusterStack, ClusterLifecycle,
// ClusterStore and Builders, and for the node. Anyone may pull them, without credentials.
type Images struct {
	Stack      Stack
	Lifecycle  Lifecycle
	Buildpacks []Buildpack
	// Kpack are kpack's images of build pods, as its controller's environment names them.
	Kpack KpackImages
	// Pause is the image of every pod's sandbox.
	Pause Ref
}

// KpackImages are the images kpack's build pods run besides the builder.
type KpackImages struct {
	BuildInit, BuildWaiter, Completion, Rebase Ref
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

// Seed publishes, made of src: a stack, the lifecycle, cf-hnc's buildpacks at version 1.0.0,
// kpack's images of build pods and the pause image. Publishing the same sources again changes
// nothing; the later Publish methods use these sources too.
//
// Repositories, under the public prefix: stack/build and stack/run (tag "latest"),
// lifecycle (tagged with its version), buildpacks/<buildpack id> (tagged with the version),
// kpack/<image> and k8s/pause (tag "local").
func (r *Registry) Seed(ctx context.Context, src Sources) (Images, error) {
	r.mu.Lock()
	r.sources = &src
	patch := r.runImagePatch
	r.mu.Unlock()

	build, err := stackImage(src.Shell, stackID, true, 0)
	if err != nil {
		return Images{}, err
	}
	buildRef, err := r.push(ctx, "stack/build", "latest", build)
	if err != nil {
		return Images{}, err
	}
	runRef, err := r.pushRunImage(ctx, src, patch)
	if err != nil {
		return Images{}, err
	}
	images := Images{Stack: Stack{ID: stackID, BuildImage: buildRef, RunImage: runRef}}
	if images.Lifecycle, err = r.publishLifecycle(ctx, src); err != nil {
		return Images{}, err
	}
	for _, id := range buildpacks.IDs() {
		bp, err := r.PublishBuildpack(ctx, id, seedBuildpackVersion)
		if err != nil {
			return Images{}, err
		}
		images.Buildpacks = append(images.Buildpacks, bp)
	}
	if images.Kpack, err = r.publishKpackImages(ctx, src); err != nil {
		return Images{}, err
	}
	pause, err := pauseImage(src.Pause)
	if err != nil {
		return Images{}, err
	}
	if images.Pause, err = r.push(ctx, "k8s/pause", "local", pause); err != nil {
		return Images{}, err
	}
	return images, nil
}

// publishLifecycle publishes the lifecycle image of src, tagged with its version.
func (r *Registry) publishLifecycle(ctx context.Context, src Sources) (Lifecycle, error) {
	img, err := layoutImage(src.LifecycleImage, "lifecycle")
	if err != nil {
		return Lifecycle{}, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return Lifecycle{}, err
	}
	version := cfg.Config.Labels[cnb.LifecycleVersionLabel]
	if !versionPattern.MatchString(version) {
		return Lifecycle{}, fmt.Errorf("the lifecycle image in %s has version %q (label %s)", src.LifecycleImage, version, cnb.LifecycleVersionLabel)
	}
	ref, err := r.push(ctx, "lifecycle", version, img)
	return Lifecycle{Version: version, Image: ref}, err
}

// publishKpackImages publishes kpack's images of build pods.
func (r *Registry) publishKpackImages(ctx context.Context, src Sources) (KpackImages, error) {
	refs := map[string]*Ref{}
	var images KpackImages
	refs["build-init"], refs["build-waiter"], refs["completion"], refs["rebase"] =
		&images.BuildInit, &images.BuildWaiter, &images.Completion, &images.Rebase
	for _, name := range kpackImageNames {
		img, err := layoutImage(src.KpackImages, name)
		if err != nil {
			return KpackImages{}, err
		}
		if *refs[name], err = r.push(ctx, "kpack/"+name, "local", img); err != nil {
			return KpackImages{}, err
		}
	}
	return images, nil
}

// PublishLayoutImage publishes the image called name of the OCI image layout at dir (with name
// empty, its only image) as repo:tag under the public prefix: the platform's own images (cf-hnc,
// HNC's and kpack's controllers), which the node pulls without credentials.
func (r *Registry) PublishLayoutImage(ctx context.Context, dir, name, repo, tag string) (Ref, error) {
	img, err := layoutImage(dir, name)
	if err != nil {
		return Ref{}, err
	}
	return r.push(ctx, repo, tag, img)
}

// seeded returns the sources of the last Seed.
func (r *Registry) seeded() (Sources, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sources == nil {
		return Sources{}, errors.New("the registry was not seeded: call Seed first")
	}
	return *r.sources, nil
}

// PublishRunImage publishes a fixed run image, as a base image's CVE fix would: the same stack
// id and tag, a new base layer, a new digest. Earlier run images stay pullable by digest.
// kpack reads the tag again only when the ClusterStack is reconciled (for example after an
// annotation changed): it does not poll.
func (r *Registry) PublishRunImage(ctx context.Context) (Ref, error) {
	src, err := r.seeded()
	if err != nil {
		return Ref{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ref, err := r.pushRunImage(ctx, src, r.runImagePatch+1)
	if err != nil {
		return Ref{}, err
	}
	r.runImagePatch++
	return ref, nil
}

// pushRunImage publishes the run image at a patch level.
func (r *Registry) pushRunImage(ctx context.Context, src Sources, patch int) (Ref, error) {
	img, err := stackImage(src.Shell, stackID, false, patch)
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
	src, err := r.seeded()
	if err != nil {
		return Stack{}, err
	}
	stack := Stack{ID: id}
	for _, build := range []bool{true, false} {
		img, err := stackImage(src.Shell, id, build, 0)
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
	src, err := r.seeded()
	if err != nil {
		return Buildpack{}, err
	}
	img, err := buildpackageImage(src, id, version)
	if err != nil {
		return Buildpack{}, err
	}
	ref, err := r.push(ctx, "buildpacks/"+id, version, img)
	if err != nil {
		return Buildpack{}, err
	}
	return Buildpack{ID: id, Version: version, Image: ref}, nil
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
