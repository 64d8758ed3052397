// Command cf-hnc-image builds the cf-hnc manager's container image with ko's library
// (github.com/google/ko, pinned by this module), without Docker and without the internet.
//
// ko's default base image lives in a registry on the internet. This command assembles the base
// in process instead (internal/baseimage): one layer with /etc/passwd and /etc/group for the
// user nonroot (65532:65532), its home directory, /tmp, and the CA certificates of the build
// machine (the manager reads droplet images from registries over TLS), and a config that runs
// as 65532. ko then adds the manager binary, built with `go build` for each platform, as its
// entrypoint.
//
//	cf-hnc-image --oci-layout .local/image                 write an OCI image layout
//	cf-hnc-image --repo registry.example/cf --tag v1       push (registry credentials as docker's)
//	cf-hnc-image --tarball f.tar --tarball-ref cf-hnc:dev  a docker tarball (kind load image-archive)
//
// It prints the reference of every image it wrote or pushed.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/ko/pkg/build"
	"github.com/google/ko/pkg/publish"

	"code.cloudfoundry.org/cf-hnc/hack/tools/ko/internal/baseimage"
)

// importPath is the manager's main package. It runs as baseimage.NonRoot; config/manager's
// Deployment says the same.
const importPath = "ko://code.cloudfoundry.org/cf-hnc"

func main() {
	var (
		project    = flag.String("project", ".", "the cf-hnc checkout to build")
		platforms  = flag.String("platforms", "linux/"+runtime.GOARCH, "comma-separated platforms; more than one makes an image index")
		layout     = flag.String("oci-layout", "", "write the image to this OCI image layout directory")
		repo       = flag.String("repo", "", "push the image to this repository (credentials from docker's config)")
		tag        = flag.String("tag", "latest", "the tag to push or to write into the tarball")
		tarFile    = flag.String("tarball", "", "write a docker tarball (for `kind load image-archive`) here")
		tarRef     = flag.String("tarball-ref", "", "the repository the tarball's image is named with (its tag is --tag)")
		caCerts    = flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to put into the image")
		sourceTime = flag.Int64("source-date-epoch", 0, "the images' creation time, in seconds since 1970 (0: reproducible images)")
	)
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("[image] ")
	if *layout == "" && *repo == "" && *tarFile == "" {
		log.Fatal("say where the image goes: --oci-layout, --repo or --tarball")
	}
	if *tarFile != "" && *tarRef == "" {
		log.Fatal("--tarball needs --tarball-ref")
	}
	certs, err := os.ReadFile(*caCerts)
	if err != nil {
		log.Fatalf("the CA certificates for the image: %v (set --ca-certificates)", err)
	}
	created := v1.Time{Time: time.Unix(*sourceTime, 0).UTC()}
	base, err := baseimage.New(strings.Split(*platforms, ","), certs, created)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	builder, err := build.NewGo(ctx, *project,
		build.WithBaseImages(func(context.Context, string) (name.Reference, build.Result, error) {
			return name.MustParseReference("cf-hnc.local/base:in-process"), base, nil
		}),
		build.WithPlatforms(strings.Split(*platforms, ",")...),
		build.WithCreationTime(created),
		build.WithDisabledSBOM(),
		build.WithTrimpath(true),
		build.WithUser(baseimage.User),
	)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("building the manager (%s) for %s", importPath, *platforms)
	result, err := builder.Build(ctx, importPath)
	if err != nil {
		log.Fatal(err)
	}
	var publishers []publish.Interface
	if *layout != "" {
		publishers = append(publishers, publish.NewLayout(*layout))
	}
	bare := func(base, _ string) string { return base }
	if *repo != "" {
		p, err := publish.NewDefault(*repo, publish.WithAuthFromKeychain(authn.DefaultKeychain),
			publish.WithNamer(bare), publish.WithTags([]string{*tag}), publish.WithUserAgent("cf-hnc-image"))
		if err != nil {
			log.Fatal(err)
		}
		publishers = append(publishers, p)
	}
	if *tarFile != "" {
		publishers = append(publishers, publish.NewTarball(*tarFile, *tarRef, bare, []string{*tag}))
	}
	for _, p := range publishers {
		ref, err := p.Publish(ctx, result, importPath)
		if err == nil {
			err = p.Close()
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ref)
	}
}
