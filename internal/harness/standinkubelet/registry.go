package standinkubelet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// loopbackDialer connects to loopback addresses only: the stand-in talks to the local
// apiserver and the local registry and nothing else, whatever a pod or a kubeconfig names.
var loopbackDialer = &net.Dialer{
	Timeout: 10 * time.Second,
	Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("the stand-in kubelet connects to loopback addresses only, not %s", address)
		}
		return nil
	},
}

// registry reads and writes images the way kpack's binaries and the lifecycle do.
type registry struct {
	transport http.RoundTripper
}

func newRegistry() registry {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = loopbackDialer.DialContext
	// Not every call takes a context (remote.CheckPushPermission does not): a registry that
	// accepts a request and never answers must not hold a worker forever.
	transport.ResponseHeaderTimeout = 30 * time.Second
	return registry{transport: transport}
}

func (r registry) options(ctx context.Context, kc authn.Keychain) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(kc),
		remote.WithTransport(r.transport),
		// kpack's registry client picks the image for the node's architecture from an index.
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}),
	}
}

// image reads an image's manifest and config, so that a missing or unreadable image fails
// here rather than when its layers are first read.
func (r registry) image(ctx context.Context, ref string, kc authn.Keychain) (v1.Image, name.Digest, error) {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return nil, name.Digest{}, err
	}
	img, err := remote.Image(parsed, r.options(ctx, kc)...)
	if err != nil {
		return nil, name.Digest{}, err
	}
	if _, err := img.ConfigFile(); err != nil {
		return nil, name.Digest{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, name.Digest{}, err
	}
	return img, parsed.Context().Digest(digest.String()), nil
}

// checkPush checks push access to a tag, as build-init does before anything else
// (dockercreds.VerifyWriteAccess, which would take http.DefaultTransport and so reach beyond
// loopback: the same check, with the stand-in's transport).
func (r registry) checkPush(tag string, kc authn.Keychain) error {
	ref, err := name.ParseReference(tag, name.WeakValidation)
	if err != nil {
		return err
	}
	return remote.CheckPushPermission(ref, kc, r.transport)
}

// push writes an image to every tag and returns its digest reference by the first tag.
func (r registry) push(ctx context.Context, img v1.Image, tags []string, kc authn.Keychain) (name.Digest, error) {
	digest, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	var first name.Reference
	for _, tag := range tags {
		ref, err := name.ParseReference(tag)
		if err != nil {
			return name.Digest{}, err
		}
		if err := remote.Write(ref, img, r.options(ctx, kc)...); err != nil {
			return name.Digest{}, fmt.Errorf("saving %s: %w", tag, err)
		}
		if first == nil {
			first = ref
		}
	}
	return first.Context().Digest(digest.String()), nil
}
