// Command go-image builds one Go command of a module into an image with ko's library, without
// Docker and without the internet, onto the in-process base of internal/baseimage, and writes it
// into a new OCI image layout annotated org.opencontainers.image.ref.name=<the command's name>.
// hack/tools.sh builds with it the images of the platform's parts that are a single Go command
// of an upstream module: Traefik (the embedded default gateway) and kube-network-policies (the
// node's NetworkPolicy enforcer).
//
//	go-image --module DIR --package IMPORT_PATH --oci-layout DIR [--ldflags "-X a.b=c"]
//
// The command is stripped (-s -w). With the default --source-date-epoch the same inputs give
// the same digest.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/ko/pkg/build"

	"code.cloudfoundry.org/cf-hnc/hack/tools/ko/internal/baseimage"
)

func main() {
	var (
		module     = flag.String("module", "", "the module to build in (it requires the command's module and pins its dependencies)")
		pkg        = flag.String("package", "", "the command's import path")
		dir        = flag.String("oci-layout", "", "write the image to this new OCI image layout directory")
		ldflags    = flag.String("ldflags", "", "linker flags besides -s -w, space-separated (for example -X pkg.Version=v1)")
		platform   = flag.String("platform", "linux/"+runtime.GOARCH, "the image's platform")
		caCerts    = flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to put into the image")
		sourceTime = flag.Int64("source-date-epoch", 0, "the image's creation time, in seconds since 1970 (0: a reproducible image)")
	)
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("[go-image] ")
	if *module == "" || *pkg == "" || *dir == "" {
		log.Fatal("--module, --package and --oci-layout are required")
	}
	certs, err := os.ReadFile(*caCerts)
	if err != nil {
		log.Fatalf("the CA certificates for the image: %v (set --ca-certificates)", err)
	}
	// ko reads the git state of the directory it builds in; keep git from looking above it.
	if abs, err := filepath.Abs(*module); err == nil {
		os.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(abs))
	}
	ctx := context.Background()
	flags := append([]string{"-s", "-w"}, strings.Fields(*ldflags)...)
	builder, err := baseimage.GoBuilder(ctx, *module, []string{*platform}, certs, v1.Time{Time: time.Unix(*sourceTime, 0).UTC()},
		build.WithDefaultLdflags(flags))
	if err != nil {
		log.Fatal(err)
	}
	importPath := "ko://" + *pkg
	if err := builder.IsSupportedReference(importPath); err != nil {
		log.Fatalf("%s: %v (does the module import it?)", *pkg, err)
	}
	log.Printf("building %s", *pkg)
	result, err := builder.Build(ctx, importPath)
	if err != nil {
		log.Fatal(err)
	}
	img, ok := result.(v1.Image)
	if !ok {
		log.Fatalf("ko built %T for one platform, not an image", result)
	}
	p, err := layout.Write(*dir, empty.Index)
	if err != nil {
		log.Fatal(err)
	}
	name := path.Base(*pkg)
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": name})); err != nil {
		log.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s@%s\n", name, digest)
}
