package baseimage

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/ko/pkg/build"
)

// GoBuilder is ko's builder for the Go module in dir onto New's base for the platforms, with
// what every image command of this module builds with; opts come after (ldflags, for one).
func GoBuilder(ctx context.Context, dir string, platforms []string, caCerts []byte, created v1.Time, opts ...build.Option) (build.Interface, error) {
	base, err := New(platforms, caCerts, created)
	if err != nil {
		return nil, err
	}
	return build.NewGo(ctx, dir, append([]build.Option{
		build.WithBaseImages(func(context.Context, string) (name.Reference, build.Result, error) {
			return name.MustParseReference("cf-hnc.local/base:in-process"), base, nil
		}),
		build.WithPlatforms(platforms...),
		build.WithCreationTime(created),
		build.WithDisabledSBOM(),
		build.WithTrimpath(true),
		build.WithUser(User),
	}, opts...)...)
}

// LinkedCommand is where an image runs a command that ko puts at /ko-app/<command>: a symbolic
// link at Path (without a leading slash), recorded in the image's history by CreatedBy with
// Comment.
type LinkedCommand struct {
	Path, CreatedBy, Comment string
}

// ImageWithLink builds importPath for one platform and adds a last layer with the link, for a
// manifest that runs the command at another path than ko's.
func ImageWithLink(ctx context.Context, builder build.Interface, importPath string, link LinkedCommand, created time.Time) (v1.Image, error) {
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
	command := importPath[strings.LastIndex(importPath, "/")+1:]
	layer, err := linkLayer(link.Path, "/ko-app/"+command, created)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: created}, CreatedBy: link.CreatedBy, Comment: link.Comment},
	})
}
