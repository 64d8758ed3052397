// Command hnc-image builds the HNC manager image that cf-hnc supports (docs/adr/0001): HNC's
// cmd/manager, built with ko's library in --module, the wrapper module that pins HNC and the
// versions of its dependencies that cf-hnc raised (hack/tools/hnc, from which the local control
// plane builds the HNC manager it tests with), onto the in-process base of internal/baseimage,
// without Docker and without the internet.
//
// HNC's Deployment (config/manager/manager.yaml of HNC's module, and its release manifest) runs
// the command /manager as user 1000: the image links /manager to ko's /ko-app/manager, so that
// HNC's manifest runs it with nothing changed but the image.
//
//	hnc-image --module hack/tools/hnc --oci-layout DIR
//	hnc-image --module hack/tools/hnc --repo registry.example/cf/hnc-manager --tag v1.1.0-cf-hnc.1
//	hnc-image --module hack/tools/hnc --tarball f.tar --tarball-ref cf-hnc.local/hnc-manager  (kind load image-archive)
//
// It prints the reference of every image it wrote or pushed. With the default
// --source-date-epoch the same inputs give the same digest.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/ko/pkg/build"
	"github.com/google/ko/pkg/publish"

	"code.cloudfoundry.org/cf-hnc/hack/tools/ko/internal/baseimage"
)

const (
	importPath = "ko://sigs.k8s.io/hierarchical-namespaces/cmd/manager"
	// versionVar is where HNC's own build puts the version it reports.
	versionVar = "sigs.k8s.io/hierarchical-namespaces/internal/version.Version"
)

func main() {
	var (
		module     = flag.String("module", "", "the module that requires HNC and pins its dependencies (hack/tools/hnc)")
		version    = flag.String("version", "v1.1.0-cf-hnc", "the version the manager reports")
		platform   = flag.String("platform", "linux/"+runtime.GOARCH, "the image's platform")
		layout     = flag.String("oci-layout", "", "write the image to this OCI image layout directory")
		repo       = flag.String("repo", "", "push the image to this repository (credentials from docker's config)")
		tag        = flag.String("tag", "v1.1.0-cf-hnc", "the tag to push or to write into the tarball")
		tarFile    = flag.String("tarball", "", "write a docker tarball (for `kind load image-archive`) here")
		tarRef     = flag.String("tarball-ref", "", "the repository the tarball's image is named with (its tag is --tag)")
		caCerts    = flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to put into the image")
		sourceTime = flag.Int64("source-date-epoch", 0, "the image's creation time, in seconds since 1970 (0: a reproducible image)")
	)
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("[hnc-image] ")
	if *module == "" || (*layout == "" && *repo == "" && *tarFile == "") {
		log.Fatal("--module is required, and --oci-layout, --repo or --tarball")
	}
	if *tarFile != "" && *tarRef == "" {
		log.Fatal("--tarball needs --tarball-ref")
	}
	certs, err := os.ReadFile(*caCerts)
	if err != nil {
		log.Fatalf("the CA certificates for the image: %v (set --ca-certificates)", err)
	}
	// ko reads the git state of the directory it builds in for its ldflags templates; the
	// checkout around the wrapper says nothing about HNC.
	if abs, err := filepath.Abs(*module); err == nil {
		os.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(abs))
	}
	created := v1.Time{Time: time.Unix(*sourceTime, 0).UTC()}
	base, err := baseimage.New([]string{*platform}, certs, created)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	builder, err := build.NewGo(ctx, *module,
		build.WithBaseImages(func(context.Context, string) (name.Reference, build.Result, error) {
			return name.MustParseReference("cf-hnc.local/base:in-process"), base, nil
		}),
		build.WithPlatforms(*platform),
		build.WithCreationTime(created),
		build.WithDisabledSBOM(),
		build.WithTrimpath(true),
		build.WithDefaultLdflags([]string{"-s", "-w", "-X " + versionVar + "=" + *version}),
		build.WithUser(baseimage.User),
	)
	if err != nil {
		log.Fatal(err)
	}
	img, err := managerImage(ctx, builder, created.Time)
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
			publish.WithNamer(bare), publish.WithTags([]string{*tag}), publish.WithUserAgent("hnc-image"))
		if err != nil {
			log.Fatal(err)
		}
		publishers = append(publishers, p)
	}
	if *tarFile != "" {
		publishers = append(publishers, publish.NewTarball(*tarFile, *tarRef, bare, []string{*tag}))
	}
	for _, p := range publishers {
		ref, err := p.Publish(ctx, img, importPath)
		if err == nil {
			err = p.Close()
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ref)
	}
}

// managerImage is ko's image of HNC's manager plus the /manager link to it.
func managerImage(ctx context.Context, builder build.Interface, created time.Time) (v1.Image, error) {
	if err := builder.IsSupportedReference(importPath); err != nil {
		return nil, fmt.Errorf("%s: %w (is it in the module's tools.go?)", importPath, err)
	}
	log.Printf("building %s", strings.TrimPrefix(importPath, "ko://"))
	result, err := builder.Build(ctx, importPath)
	if err != nil {
		return nil, err
	}
	img, ok := result.(v1.Image)
	if !ok {
		return nil, fmt.Errorf("ko built %T for one platform, not an image", result)
	}
	link, err := baseimage.Link("manager", "/ko-app/manager", created)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{
		Layer: link,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "hnc-image",
			Comment:   "/manager, where HNC's Deployment runs it",
		},
	})
}
