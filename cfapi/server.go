// Package cfapi is a subset of the Cloud Foundry V3 API for the cf CLI, in front of cf-hnc's
// objects: the root document that turns on the CLI's Kubernetes login, /whoami, orgs, spaces
// and the jobs of their deletion, the org and space roles, info, stacks and buildpacks; and
// for cf push, cf restage, cf apps, cf app, cf scale and cf delete: apps and their manifests,
// processes, their scale and their instances, packages, builds, droplets and staging logs.
//
// Every request acts with the caller's own Kubernetes credentials (package auth), so that RBAC
// and cf-hnc's admission decide every read and write as they do for kubectl. The API's own
// credentials only read, from a cache: the orgs, the spaces and the RoleBindings of the CF
// roles, to filter lists by membership (package membership), to wait for a new org or space to
// become ready, and to tell when an org's or a space's deletion is done; and, without a cache,
// kpack's ClusterStacks and ClusterStores, which are the same for every user.
package cfapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"time"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/auth"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/membership"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// Config is how the API is installed.
type Config struct {
	// RootNamespace holds the CFOrgs.
	RootNamespace string
	// ExternalURL is the API's address as the cf CLI reaches it, for the absolute links it
	// follows. Nil: each request's own scheme and Host.
	ExternalURL *url.URL
	// SessionTTL is how long a user's identity is remembered per credential.
	SessionTTL time.Duration
	// ReadyTimeout bounds how long creating an org or a space waits for its namespace; the
	// cf CLI's next request may go into it.
	ReadyTimeout time.Duration
	// DeleteTimeout is how long a deletion may take before its job fails.
	DeleteTimeout time.Duration
	// Log receives a line per failed request and, at V(1), per request.
	Log logr.Logger
}

// cacheSyncTimeout bounds the first read of the API's cache: without the read rights of its
// ServiceAccount the cache never syncs, and the API should fail to start rather than hang.
const cacheSyncTimeout = 2 * time.Minute

// New starts the API's cache of the cluster of config, which holds the API's own read-only
// credentials, waits until it is filled, and returns the API's handler. The cache stops with ctx.
func New(ctx context.Context, config *rest.Config, cfg Config) (http.Handler, error) {
	cl, err := newCluster(ctx, config, cfg.RootNamespace)
	if err != nil {
		return nil, err
	}
	started := make(chan error, 1)
	go func() { started <- cl.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, cacheSyncTimeout)
	defer cancel()
	if !cl.GetCache().WaitForCacheSync(syncCtx) {
		select {
		case err := <-started:
			return nil, fmt.Errorf("the API's cache stopped: %w", err)
		default:
			return nil, errors.New("the API's cache did not sync: may its credentials list and watch cforgs, cfspaces and rolebindings?")
		}
	}
	s := &server{
		cfg:   cfg,
		cache: cl.GetClient(),
		live:  cl.GetAPIReader(),
		auth:  auth.NewAuthenticator(config, client.Options{Scheme: cl.GetScheme(), Mapper: cl.GetRESTMapper()}, cfg.SessionTTL),
	}
	return s.routes(), nil
}

// newCluster is the API's view of the cluster: a cache of the CFOrgs of the root namespace,
// every CFSpace (found by name, which is its namespace's), and every RoleBinding, trimmed to
// the bindings of the CF roles and indexed by subject. Reading any other kind from the cache
// fails rather than starting an informer that the API's rights do not cover.
func newCluster(ctx context.Context, config *rest.Config, root string) (cluster.Cluster, error) {
	cl, err := cluster.New(config, func(o *cluster.Options) {
		o.Scheme = cfscheme.New()
		o.Cache = cache.Options{
			DefaultTransform:            cache.TransformStripManagedFields(),
			ReaderFailOnMissingInformer: true,
			ByObject: map[client.Object]cache.ByObject{
				&cfv1alpha1.CFOrg{}:   {Namespaces: map[string]cache.Config{root: {}}},
				&rbacv1.RoleBinding{}: {Transform: membership.TrimRoleBinding},
			},
		}
	})
	if err != nil {
		return nil, err
	}
	if _, err := cl.GetCache().GetInformer(ctx, &cfv1alpha1.CFOrg{}); err != nil {
		return nil, err
	}
	if err := cl.GetFieldIndexer().IndexField(ctx, &cfv1alpha1.CFSpace{}, membership.NameField, func(obj client.Object) []string {
		return []string{obj.GetName()}
	}); err != nil {
		return nil, err
	}
	if err := membership.IndexRoleBindings(ctx, cl.GetFieldIndexer()); err != nil {
		return nil, err
	}
	return cl, nil
}

type server struct {
	cfg Config
	// cache reads the API's cache, with its own rights.
	cache client.Reader
	// live reads the apiserver with the API's own rights, where a stale cache would answer
	// wrong (whether a deletion is done), and what the API does not cache (stacks, buildpacks).
	live client.Reader
	auth *auth.Authenticator
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", s.handle(s.root))
	mux.Handle("GET /v3", s.handle(s.v3))
	mux.Handle("GET /v3/info", s.handle(s.info))
	authenticated := map[string]handlerFunc{
		"GET /whoami":                     s.whoami,
		"GET /v3/organizations":           s.listOrgs,
		"POST /v3/organizations":          s.createOrg,
		"GET /v3/organizations/{guid}":    s.getOrg,
		"DELETE /v3/organizations/{guid}": s.deleteOrg,
		"GET /v3/spaces":                  s.listSpaces,
		"POST /v3/spaces":                 s.createSpace,
		"GET /v3/spaces/{guid}":           s.getSpace,
		"DELETE /v3/spaces/{guid}":        s.deleteSpace,
		"GET /v3/jobs/{guid}":             s.getJob,
		"GET /v3/roles":                   s.listRoles,
		"POST /v3/roles":                  s.createRole,
		"DELETE /v3/roles/{guid}":         s.deleteRole,
		"GET /v3/stacks":                  s.listStacks,
		"GET /v3/buildpacks":              s.listBuildpacks,
	}
	maps.Copy(authenticated, s.appRoutes())
	maps.Copy(authenticated, s.stagingRoutes())
	for pattern, h := range authenticated {
		mux.Handle(pattern, s.handle(s.authenticate(h)))
	}
	mux.Handle("/", s.handle(func(http.ResponseWriter, *http.Request) error { return cferror.UnknownRequest() }))
	return mux
}
