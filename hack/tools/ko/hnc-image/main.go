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
	"log"
	"os"
	"path/filepath"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/ko/pkg/build"

	"code.cloudfoundry.org/cf-hnc/hack/tools/ko/internal/baseimage"
	"code.cloudfoundry.org/cf-hnc/hack/tools/ko/internal/destination"
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
		caCerts    = flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to put into the image")
		sourceTime = flag.Int64("source-date-epoch", 0, "the image's creation time, in seconds since 1970 (0: a reproducible image)")
		to         = destination.Register("v1.1.0-cf-hnc")
	)
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("[hnc-image] ")
	if *module == "" {
		log.Fatal("--module is required")
	}
	if err := to.Check(); err != nil {
		log.Fatal(err)
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
	created := time.Unix(*sourceTime, 0).UTC()
	ctx := context.Background()
	builder, err := baseimage.GoBuilder(ctx, *module, []string{*platform}, certs, v1.Time{Time: created},
		build.WithDefaultLdflags([]string{"-s", "-w", "-X " + versionVar + "=" + *version}))
	if err != nil {
		log.Fatal(err)
	}
	img, err := baseimage.ImageWithLink(ctx, builder, importPath, baseimage.LinkedCommand{
		Path: "manager", CreatedBy: "hnc-image", Comment: "/manager, where HNC's Deployment runs it",
	}, created)
	if err != nil {
		log.Fatal(err)
	}
	if err := to.Publish(ctx, img, importPath, "hnc-image"); err != nil {
		log.Fatal(err)
	}
}
