package cfapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/singleflight"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/auth"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
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
	// ReadTimeout bounds how long a request's body may take to come, an upload's how long it may
	// pause. Zero: DefaultReadTimeout.
	ReadTimeout time.Duration
	// ScratchDir is where uploads are staged on disk while they are converted and pushed.
	ScratchDir string
	// ScratchBytes bounds the bytes that all the uploads of this API, at once, may hold in
	// ScratchDir: an upload that finds no room is refused, and retried by the user later. Zero:
	// DefaultScratchBytes.
	ScratchBytes int64
	// MaxLists bounds the lists read as the user across spaces (apps, packages, processes,
	// droplets, roles) that this API serves at once, MaxUploads the uploads; one user may hold
	// half of each. Zero: DefaultMaxLists, DefaultMaxUploads.
	MaxLists, MaxUploads int
	// Reviews bounds the SelfSubjectReviews of credentials that the API has not decided on yet,
	// which anybody who reaches it can send. Zero (both fields): auth.DefaultReviews.
	Reviews auth.ReviewLimit
	// Log receives a line per failed request and, at V(1), per request.
	Log logr.Logger
}

// DefaultScratchBytes is the scratch space of uploads that Config does not set: an upload holds
// its zip and the layer made of it, each up to the size of the package.
const DefaultScratchBytes = 1 << 30

// DefaultReadTimeout is the ReadTimeout that Config does not set: a JSON body is at most a MiB.
const DefaultReadTimeout = 30 * time.Second

// The concurrency that Config does not set. A list holds its page and a chunk of objects (a few
// MB at per_page=5000), an upload a zip's directory (up to about 80 MB) and its streams: within
// the API's 512 Mi.
const (
	DefaultMaxLists   = 16
	DefaultMaxUploads = 2
)

// cacheSyncTimeout bounds the first read of the API's cache: without the read rights of its
// ServiceAccount the cache never syncs, and the API should fail to start rather than hang.
const cacheSyncTimeout = 2 * time.Minute

// New starts the API's cache of the cluster of config, which holds the API's own read-only
// credentials, waits until it is filled, and returns the API's handler. The cache stops with ctx.
func New(ctx context.Context, config *rest.Config, cfg Config) (http.Handler, error) {
	cfg.ReadTimeout = cmp.Or(cfg.ReadTimeout, DefaultReadTimeout)
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
		cfg:  cfg,
		dir:  cf.Directory{Reader: cl.GetClient(), Root: cfg.RootNamespace},
		live: cl.GetAPIReader(),
		auth: auth.NewAuthenticator(config, client.Options{Scheme: cl.GetScheme(), Mapper: cl.GetRESTMapper()}, cfg.SessionTTL,
			cmp.Or(cfg.Reviews, auth.DefaultReviews)),
		scratch:  newScratch(cfg.ScratchDir, cmp.Or(cfg.ScratchBytes, DefaultScratchBytes)),
		lists:    newSlots("lists", cmp.Or(cfg.MaxLists, DefaultMaxLists)),
		uploads:  newSlots("uploads", cmp.Or(cfg.MaxUploads, DefaultMaxUploads)),
		ownReads: newOwnReads(),
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
				&rbacv1.RoleBinding{}: {Transform: cf.TrimRoleBinding},
			},
		}
	})
	if err != nil {
		return nil, err
	}
	if _, err := cl.GetCache().GetInformer(ctx, &cfv1alpha1.CFOrg{}); err != nil {
		return nil, err
	}
	if err := cf.IndexSpaceNames(ctx, cl.GetFieldIndexer()); err != nil {
		return nil, err
	}
	if err := cf.IndexRoleBindings(ctx, cl.GetFieldIndexer()); err != nil {
		return nil, err
	}
	return cl, nil
}

type server struct {
	cfg Config
	// dir says, from the API's cache, which orgs and spaces a user sees.
	dir cf.Directory
	// live reads the apiserver with the API's own rights, where a stale cache would answer
	// wrong (whether a deletion is done), and what the API does not cache (stacks, buildpacks).
	live    client.Reader
	auth    *auth.Authenticator
	scratch *scratch
	// lists and uploads bound the requests that cost the API most while they run.
	lists, uploads *slots
	// ownReads bounds each user's share of the reads made with the API's own rights (live), and
	// reading lets the requests that ask for the same at once share one read.
	ownReads *ownReads
	reading  singleflight.Group
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", s.handle(s.root))
	mux.Handle("GET /v3", s.handle(s.v3))
	mux.Handle("GET /v3/info", s.handle(s.info))
	for pattern, h := range s.authenticatedRoutes() {
		mux.Handle(pattern, s.handle(s.authenticate(h)))
	}
	mux.Handle("/", s.handle(func(http.ResponseWriter, *http.Request) error { return cferror.UnknownRequest() }))
	return mux
}

// authenticatedRoutes are the endpoints that act as the user of the request's credentials.
func (s *server) authenticatedRoutes() map[string]handlerFunc {
	return map[string]handlerFunc{
		"GET /whoami":                                         s.whoami,
		"GET /v3/organizations":                               s.listOrgs,
		"POST /v3/organizations":                              s.createOrg,
		"GET /v3/organizations/{guid}":                        s.getOrg,
		"DELETE /v3/organizations/{guid}":                     s.deleteOrg,
		"GET /v3/spaces":                                      s.listSpaces,
		"POST /v3/spaces":                                     s.createSpace,
		"GET /v3/spaces/{guid}":                               s.getSpace,
		"DELETE /v3/spaces/{guid}":                            s.deleteSpace,
		"GET /v3/jobs/{guid}":                                 s.getJob,
		"GET /v3/roles":                                       s.limited(s.lists, s.listRoles),
		"POST /v3/roles":                                      s.createRole,
		"DELETE /v3/roles/{guid}":                             s.deleteRole,
		"GET /v3/stacks":                                      s.listStacks,
		"GET /v3/buildpacks":                                  s.listBuildpacks,
		"POST /v3/spaces/{guid}/actions/apply_manifest":       s.applyManifest,
		"POST /v3/spaces/{guid}/manifest_diff":                s.manifestDiff,
		"GET /v3/apps":                                        s.limited(s.lists, s.listApps),
		"POST /v3/apps":                                       s.createApp,
		"GET /v3/apps/{guid}":                                 s.getApp,
		"DELETE /v3/apps/{guid}":                              s.deleteApp,
		"POST /v3/apps/{guid}/actions/start":                  s.startApp,
		"POST /v3/apps/{guid}/actions/stop":                   s.stopApp,
		"POST /v3/apps/{guid}/actions/restart":                s.restartApp,
		"GET /v3/apps/{guid}/relationships/current_droplet":   s.getCurrentDroplet,
		"PATCH /v3/apps/{guid}/relationships/current_droplet": s.setCurrentDroplet,
		"GET /v3/apps/{guid}/processes":                       s.listAppProcesses,
		"POST /v3/apps/{guid}/processes/{type}/actions/scale": s.scaleAppProcess,
		"GET /v3/processes":                                   s.limited(s.lists, s.listProcesses),
		"GET /v3/processes/{guid}":                            s.getProcess,
		"GET /v3/processes/{guid}/stats":                      s.processStats,
		"GET /v3/processes/{guid}/sidecars":                   s.listSidecars,
		"POST /v3/processes/{guid}/actions/scale":             s.scaleProcess,
		"GET /v3/apps/{guid}/routes":                          s.listAppRoutes,
		"GET /v3/routes":                                      s.listRoutes,
		"GET /v3/deployments":                                 s.listDeployments,
		"POST /v3/deployments":                                s.createDeployment,
		"POST /v3/resource_matches":                           s.matchResources,
		"POST /v3/packages":                                   s.createPackage,
		"GET /v3/packages":                                    s.limited(s.lists, s.listPackages),
		"GET /v3/packages/{guid}":                             s.getPackage,
		"POST /v3/packages/{guid}/upload":                     s.limited(s.uploads, s.uploadPackage),
		"GET /v3/packages/{guid}/droplets":                    s.limited(s.lists, s.listPackageDroplets),
		"POST /v3/builds":                                     s.createBuild,
		"GET /v3/builds/{guid}":                               s.getBuild,
		"GET /v3/droplets/{guid}":                             s.getDroplet,
		"GET /v3/apps/{guid}/droplets":                        s.limited(s.lists, s.listAppDroplets),
		"GET /v3/apps/{guid}/droplets/current":                s.getAppCurrentDroplet,
		"GET /api/v1/info":                                    s.logCacheInfo,
		"GET /api/v1/read/{source}":                           s.readLogs,
	}
}
