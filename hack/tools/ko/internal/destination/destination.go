// Package destination publishes what ko built where an image command's flags say: an OCI image
// layout directory, a repository (credentials as docker's), or a docker tarball for `kind load
// image-archive`.
package destination

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/ko/pkg/build"
	"github.com/google/ko/pkg/publish"
)

// Flags are the destinations a command was given.
type Flags struct {
	layout, repo, tag, tarball, tarballRef *string
}

// Register defines --oci-layout, --repo, --tag, --tarball and --tarball-ref.
func Register(defaultTag string) *Flags {
	return &Flags{
		layout:     flag.String("oci-layout", "", "write the image to this OCI image layout directory"),
		repo:       flag.String("repo", "", "push the image to this repository (credentials from docker's config)"),
		tag:        flag.String("tag", defaultTag, "the tag to push or to write into the tarball"),
		tarball:    flag.String("tarball", "", "write a docker tarball (for `kind load image-archive`) here"),
		tarballRef: flag.String("tarball-ref", "", "the repository the tarball's image is named with (its tag is --tag)"),
	}
}

// Check says what is missing.
func (f *Flags) Check() error {
	if *f.layout == "" && *f.repo == "" && *f.tarball == "" {
		return errors.New("say where the image goes: --oci-layout, --repo or --tarball")
	}
	if *f.tarball != "" && *f.tarballRef == "" {
		return errors.New("--tarball needs --tarball-ref")
	}
	return nil
}

// Publish writes result to every destination given, and prints the reference of each.
func (f *Flags) Publish(ctx context.Context, result build.Result, importPath, userAgent string) error {
	var publishers []publish.Interface
	if *f.layout != "" {
		publishers = append(publishers, publish.NewLayout(*f.layout))
	}
	bare := func(base, _ string) string { return base }
	if *f.repo != "" {
		p, err := publish.NewDefault(*f.repo, publish.WithAuthFromKeychain(authn.DefaultKeychain),
			publish.WithNamer(bare), publish.WithTags([]string{*f.tag}), publish.WithUserAgent(userAgent))
		if err != nil {
			return err
		}
		publishers = append(publishers, p)
	}
	if *f.tarball != "" {
		publishers = append(publishers, publish.NewTarball(*f.tarball, *f.tarballRef, bare, []string{*f.tag}))
	}
	for _, p := range publishers {
		ref, err := p.Publish(ctx, result, importPath)
		if err == nil {
			err = p.Close()
		}
		if err != nil {
			return err
		}
		fmt.Println(ref)
	}
	return nil
}
