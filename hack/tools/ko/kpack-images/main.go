// Command kpack-images builds kpack's images from kpack's own module with ko's library, without
// Docker and without the internet: the controller and the webhook that kpack's release
// Deployments run, and the images that kpack's build and rebase pods run (build-init,
// build-waiter, completion, rebase). It writes them into one OCI image layout, each annotated
// with org.opencontainers.image.ref.name=<name>.
//
// The commands are built in --module, a module that requires kpack and pins its dependencies
// (hack/tools/kpack), onto the in-process base of internal/baseimage, as the user 65532:
// kpack's rebase pod sets runAsNonRoot but no user. kpack v0.18.0's pods run
// /cnb/process/<name> (build_pod.go: PrepareCommand, CompletionCommand, RebaseCommand), where
// kpack's release images have them; ko puts a command at /ko-app/<name>, so every image gets a
// last layer with the symlink /cnb/process/<name> -> /ko-app/<name>. The entrypoint stays
// /ko-app/<name> (the build-waiter container runs the entrypoint).
//
//	kpack-images --module hack/tools/kpack --oci-layout DIR
//
// With the default --source-date-epoch every time in the images is fixed, so the same inputs
// give the same digests.
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
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/ko/pkg/build"

	"code.cloudfoundry.org/cf-hnc/hack/tools/ko/internal/baseimage"
)

const kpackCmd = "github.com/pivotal/kpack/cmd/"

// podImages are the images of kpack's build and rebase pods, by the name of their command.
var podImages = []string{"build-init", "build-waiter", "completion", "rebase"}

// deploymentImages are the images of kpack's release Deployments (config/controller.yaml and
// config/webhook.yaml of kpack's module), which run their entrypoint.
var deploymentImages = []string{"controller", "webhook"}

func main() {
	var (
		module     = flag.String("module", "", "the module that requires kpack and pins its dependencies (hack/tools/kpack)")
		dir        = flag.String("oci-layout", "", "write the images to this new OCI image layout directory")
		platform   = flag.String("platform", "linux/"+runtime.GOARCH, "the images' platform")
		caCerts    = flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to put into the images")
		sourceTime = flag.Int64("source-date-epoch", 0, "the images' creation time, in seconds since 1970 (0: reproducible images)")
	)
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("[kpack-images] ")
	if *module == "" || *dir == "" {
		log.Fatal("--module and --oci-layout are required")
	}
	certs, err := os.ReadFile(*caCerts)
	if err != nil {
		log.Fatalf("the CA certificates for the images: %v (set --ca-certificates)", err)
	}
	// ko reads the git state of the directory it builds in for its ldflags templates, and logs
	// all of `git status` when the checkout around hack/tools/kpack is dirty; that state says
	// nothing about kpack's commands. Keep git from looking above the module.
	if abs, err := filepath.Abs(*module); err == nil {
		os.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(abs))
	}
	created := time.Unix(*sourceTime, 0).UTC()
	ctx := context.Background()
	// Without symbols: kpack's commands are large (build-init 115 MB, completion 127 MB with
	// them), and the node's registry is seeded with them at every start.
	builder, err := baseimage.GoBuilder(ctx, *module, []string{*platform}, certs, v1.Time{Time: created},
		build.WithDefaultLdflags([]string{"-s", "-w"}))
	if err != nil {
		log.Fatal(err)
	}
	p, err := layout.Write(*dir, empty.Index)
	if err != nil {
		log.Fatal(err)
	}
	for _, cmd := range append(podImages, deploymentImages...) {
		var img v1.Image
		if slices.Contains(podImages, cmd) {
			img, err = baseimage.ImageWithLink(ctx, builder, "ko://"+kpackCmd+cmd, baseimage.LinkedCommand{
				Path:      path.Join("cnb/process", cmd),
				CreatedBy: "kpack-images",
				Comment:   "/cnb/process/" + cmd + ", where kpack's build pods run it",
			}, created)
		} else {
			img, err = imageOf(ctx, builder, "ko://"+kpackCmd+cmd)
		}
		if err != nil {
			log.Fatalf("%s: %v", cmd, err)
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": cmd})); err != nil {
			log.Fatal(err)
		}
		digest, err := img.Digest()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s@%s\n", cmd, digest)
	}
}

// imageOf builds the command at importPath into an image of the one platform of builder.
func imageOf(ctx context.Context, builder build.Interface, importPath string) (v1.Image, error) {
	result, err := builder.Build(ctx, importPath)
	if err != nil {
		return nil, err
	}
	img, ok := result.(v1.Image)
	if !ok {
		return nil, fmt.Errorf("%s: ko built an image index, not an image of one platform", importPath)
	}
	return img, nil
}
