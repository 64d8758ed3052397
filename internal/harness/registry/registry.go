// Package registry runs an in-memory OCI registry on loopback for the local control plane and
// the tests, and publishes into it what the node and kpack pull: a stack of cf-hnc's own, the
// CNB lifecycle, cf-hnc's buildpacks, kpack's images of build pods and the pause image.
//
// The registry is go-containerregistry's pkg/registry behind an access gate that speaks HTTP
// Basic authentication. Its rule:
//
//   - Every user is granted repository prefixes, each ending in "/" (for example "org-a/"), and
//     may pull from and push to the repositories under them; and it may be granted pull-only
//     prefixes, as a registry grants each org's account read access to an operator's private
//     builder repository.
//   - Repositories under the public prefix ("cnb/" unless Options say otherwise) may be pulled by
//     anyone, also without credentials: the node pulls kpack's images and the pause image
//     there without any. Only users granted that prefix, and the registry's own publisher that
//     Seed and the Publish methods use, push there.
//   - Wrong credentials are refused everywhere, also for public repositories, so that a client
//     with a broken secret fails instead of silently pulling anonymously.
//   - A blob is served from a repository only after it was uploaded to that repository: the
//     blob store is shared by content, and without this check anybody who learnt a digest
//     could read another tenant's layers through their own repository. Cross-repository
//     mounts are not supported; clients then upload the blob (the images here are tiny).
//   - Listing the catalog is refused, as it would reveal other tenants' repository names;
//     deleting blobs is refused, as blobs are shared by content.
//
// Unauthenticated requests are answered with 401 and `WWW-Authenticate: Basic`, also on the
// /v2/ ping: clients such as go-containerregistry's (which kpack uses) only send credentials
// after the ping challenged them, and they fall back to Basic authentication because no token
// service is offered.
package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
)

// DefaultPublicPrefix is the public prefix when Options leave it empty.
const DefaultPublicPrefix = "cnb/"

// Options configure Start.
type Options struct {
	// PublicPrefix is the repository prefix, ending in "/", that anyone may pull from without
	// credentials. The synthetic CNB images are published under it. Empty: DefaultPublicPrefix.
	PublicPrefix string
	// Log receives one line per request: the user ("-" when anonymous), method, path and
	// status. Nil discards them.
	Log io.Writer
	// Host is the address image references and docker credentials name the registry by, with
	// the registry's port: an address that the network forwards to the registry's loopback
	// port, so that pods reach it at the same name as the host (the local control plane's pod
	// network). Nil: 127.0.0.1.
	Host net.IP
}

// Registry is a running in-memory registry. Its contents are lost when it stops.
type Registry struct {
	host      string
	server    *http.Server
	gate      *gate
	publisher authn.Authenticator

	mu sync.Mutex
	// runImagePatch counts the run images published so far; PublishRunImage raises it.
	runImagePatch int
	// sources are what Seed published from, for the later Publish methods.
	sources *Sources

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// Start serves a new, empty registry on 127.0.0.1 at a free port. It stops when ctx is done
// or Close is called.
func Start(ctx context.Context, opts Options) (*Registry, error) {
	publicPrefix := opts.PublicPrefix
	if publicPrefix == "" {
		publicPrefix = DefaultPublicPrefix
	}
	if err := validatePrefix(publicPrefix); err != nil {
		return nil, fmt.Errorf("public prefix: %w", err)
	}
	logWriter := opts.Log
	if logWriter == nil {
		logWriter = io.Discard
	}
	logger := log.New(logWriter, "registry: ", log.LstdFlags|log.Lmicroseconds)

	publisher := newPublisher(publicPrefix)
	g := newGate(
		// The gate logs every request with its user; the upstream log would repeat each line.
		ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))),
		publicPrefix, logger)
	if err := g.addUser(publisher); err != nil {
		return nil, err
	}

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on loopback: %w", err)
	}
	host := listener.Addr().String()
	if opts.Host != nil {
		host = net.JoinHostPort(opts.Host.String(), strconv.Itoa(listener.Addr().(*net.TCPAddr).Port))
	}
	r := &Registry{
		host: host,
		server: &http.Server{
			Handler:           g,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          logger,
		},
		gate:      g,
		publisher: &authn.Basic{Username: publisher.Name, Password: publisher.Password},
		closed:    make(chan struct{}),
	}
	go func() { _ = r.server.Serve(listener) }()
	go func() {
		select {
		case <-ctx.Done():
			_ = r.Close()
		case <-r.closed:
		}
	}()
	return r, nil
}

// Host is the registry's address, "127.0.0.1:PORT" (or Options.Host and the port), as image
// references and docker credentials name it.
func (r *Registry) Host() string { return r.host }

// Port is the loopback port the registry listens on.
func (r *Registry) Port() int {
	_, port, _ := net.SplitHostPort(r.host)
	n, _ := strconv.Atoi(port)
	return n
}

// Close stops the registry and drops open connections. Calling it again does nothing.
func (r *Registry) Close() error {
	r.closeOnce.Do(func() {
		close(r.closed)
		if err := r.server.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.closeErr = err
		}
	})
	return r.closeErr
}

// AddUser adds an account, or replaces the account with the same name (to change its password,
// prefixes or pull prefixes). Each prefix must end in "/".
func (r *Registry) AddUser(u User) error {
	if u.Name == publisherName {
		return fmt.Errorf("user name %q is reserved for the registry's publisher", u.Name)
	}
	return r.gate.addUser(u)
}

// AddTenantAccounts lets any user named "<prefix><name>" (for example "orgs/acme" for prefix
// "orgs/") log in with password and pull and push below "<prefix><name>/", and nowhere else:
// an account per tenant, scoped to the tenant's repositories, without adding each one. The
// local control plane offers them to operators for per-org credentials.
func (r *Registry) AddTenantAccounts(prefix, password string) error {
	return r.gate.addTenantAccounts(prefix, password)
}

// PushedBy says which user pushed the manifest that ref names now, for example
// "127.0.0.1:PORT/org-a/app:latest" or ".../org-a/app@sha256:...". The synthetic CNB images
// are pushed by the registry's own publisher account. ok is false when ref names another
// registry or nothing was pushed there.
func (r *Registry) PushedBy(ref string) (user string, ok bool) {
	parsed, err := name.ParseReference(ref)
	if err != nil || parsed.Context().RegistryStr() != r.host {
		return "", false
	}
	return r.gate.pushedBy(parsed.Context().RepositoryStr(), parsed.Identifier())
}

// ManifestsPushed counts the image manifests pushed so far to repositories whose path starts
// with prefix (for example "cnb/builders/"): how many images were written there.
func (r *Registry) ManifestsPushed(prefix string) int {
	return r.gate.manifestsPushed(prefix)
}

// RefusePushes makes the registry refuse every push to repositories below prefix (for example
// "org-a/space-1/app-1"), with 403 DENIED and message, as a registry whose quota is exhausted or
// whose repository is read-only answers; pulls still work. Calling the returned function ends
// it. Tests make builds and rebases fail with it, for real.
func (r *Registry) RefusePushes(prefix, message string) (restore func()) {
	return r.gate.refuse(prefix, push, message)
}

// RefusePulls makes the registry refuse to serve image manifests below prefix, with 403 DENIED
// and message, so that every pull there fails (kpack reading a Builder's image, a node's image
// pull, a build step's read), while
// pushes, which only check that a manifest exists, still work. Calling the returned function
// ends it.
func (r *Registry) RefusePulls(prefix, message string) (restore func()) {
	return r.gate.refuse(prefix, pull, message)
}
