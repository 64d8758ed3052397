package baseimage

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
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

// WithCommandOf adds to the image of each platform in into the last layer of other's image for
// that platform: the one where ko puts other's command (/ko-app/<command>). One image then
// carries both commands, and runs into's.
func WithCommandOf(into, other build.Result) (build.Result, error) {
	switch into := into.(type) {
	case v1.Image:
		img, ok := other.(v1.Image)
		if !ok {
			return nil, fmt.Errorf("ko built %T and %T for the same platforms", into, other)
		}
		return withLastLayerOf(into, img)
	case v1.ImageIndex:
		others, ok := other.(v1.ImageIndex)
		if !ok {
			return nil, fmt.Errorf("ko built %T and %T for the same platforms", into, other)
		}
		return indexWithCommandOf(into, others)
	default:
		return nil, fmt.Errorf("ko built %T, neither an image nor an index", into)
	}
}

func indexWithCommandOf(into, other v1.ImageIndex) (v1.ImageIndex, error) {
	manifest, err := into.IndexManifest()
	if err != nil {
		return nil, err
	}
	others, err := other.IndexManifest()
	if err != nil {
		return nil, err
	}
	var adds []mutate.IndexAddendum
	for _, desc := range manifest.Manifests {
		i := slices.IndexFunc(others.Manifests, func(o v1.Descriptor) bool {
			return o.Platform != nil && desc.Platform != nil && o.Platform.Equals(*desc.Platform)
		})
		if i < 0 {
			return nil, fmt.Errorf("no image for platform %v to add", desc.Platform)
		}
		img, err := into.Image(desc.Digest)
		if err != nil {
			return nil, err
		}
		add, err := other.Image(others.Manifests[i].Digest)
		if err != nil {
			return nil, err
		}
		combined, err := withLastLayerOf(img, add)
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: combined, Descriptor: v1.Descriptor{Platform: desc.Platform}})
	}
	return mutate.IndexMediaType(mutate.AppendManifests(empty.Index, adds...), types.OCIImageIndex), nil
}

func withLastLayerOf(into, other v1.Image) (v1.Image, error) {
	layers, err := other.Layers()
	if err != nil {
		return nil, err
	}
	if len(layers) == 0 {
		return nil, errors.New("ko built an image without layers")
	}
	config, err := into.ConfigFile()
	if err != nil {
		return nil, err
	}
	return mutate.Append(into, mutate.Addendum{
		Layer:   layers[len(layers)-1],
		History: v1.History{Created: config.Created, CreatedBy: "ko", Comment: "a second command, beside the entrypoint's"},
	})
}
