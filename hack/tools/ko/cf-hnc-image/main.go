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
	"log"
	"os"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"code.cloudfoundry.org/cf-hnc/hack/tools/ko/internal/baseimage"
	"code.cloudfoundry.org/cf-hnc/hack/tools/ko/internal/destination"
)

// importPath is the manager's main package, the image's entrypoint. It runs as
// baseimage.NonRoot; config/manager's Deployment says the same.
const importPath = "ko://code.cloudfoundry.org/cf-hnc"

// apiImportPath is the CF API's main package, which the image carries beside the manager at
// /ko-app/cf-api: config/cf-api's Deployment runs it from the manager's image.
const apiImportPath = "ko://code.cloudfoundry.org/cf-hnc/cmd/cf-api"

func main() {
	var (
		project    = flag.String("project", ".", "the cf-hnc checkout to build")
		platforms  = flag.String("platforms", "linux/"+runtime.GOARCH, "comma-separated platforms; more than one makes an image index")
		caCerts    = flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to put into the image")
		sourceTime = flag.Int64("source-date-epoch", 0, "the images' creation time, in seconds since 1970 (0: reproducible images)")
		to         = destination.Register("latest")
	)
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("[image] ")
	if err := to.Check(); err != nil {
		log.Fatal(err)
	}
	certs, err := os.ReadFile(*caCerts)
	if err != nil {
		log.Fatalf("the CA certificates for the image: %v (set --ca-certificates)", err)
	}
	ctx := context.Background()
	builder, err := baseimage.GoBuilder(ctx, *project, strings.Split(*platforms, ","), certs, v1.Time{Time: time.Unix(*sourceTime, 0).UTC()})
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("building the manager (%s) and the CF API (%s) for %s", importPath, apiImportPath, *platforms)
	manager, err := builder.Build(ctx, importPath)
	if err != nil {
		log.Fatal(err)
	}
	api, err := builder.Build(ctx, apiImportPath)
	if err != nil {
		log.Fatal(err)
	}
	result, err := baseimage.WithCommandOf(manager, api)
	if err != nil {
		log.Fatal(err)
	}
	if err := to.Publish(ctx, result, importPath, "cf-hnc-image"); err != nil {
		log.Fatal(err)
	}
}
