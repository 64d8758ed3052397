package registry

import (
	"crypto/subtle"
	"encoding/json"
	"log"
	"net/http"
	"slices"
	"strings"
	"sync"
)

const authChallenge = `Basic realm="cf-hnc registry"`

// gate authenticates and authorizes every request before the upstream registry sees it, and
// remembers what the upstream registry cannot tell: which repositories hold a blob, and who
// pushed each manifest.
type gate struct {
	next         http.Handler
	publicPrefix string
	log          *log.Logger

	mu    sync.RWMutex
	users map[string]User
	// tenants are the prefixes of tenant accounts, with their password.
	tenants map[string]string
	// blobs holds, per repository, the digests of the blobs uploaded to it.
	blobs map[string]map[string]bool
	// pushers holds the user who last pushed a manifest, by repository and tag or digest.
	pushers map[manifestKey]string
	// manifestPuts counts the manifests pushed, by repository.
	manifestPuts map[string]int
	// refusals are the repository prefixes where pushes or pulls are refused, with the
	// registry's message.
	refusals map[refusal]string
}

type manifestKey struct{ repo, ref string }

type refusal struct {
	prefix string
	what   permission
}

func newGate(next http.Handler, publicPrefix string, logger *log.Logger) *gate {
	return &gate{
		next:         next,
		publicPrefix: publicPrefix,
		log:          logger,
		users:        map[string]User{},
		tenants:      map[string]string{},
		blobs:        map[string]map[string]bool{},
		pushers:      map[manifestKey]string{},
		manifestPuts: map[string]int{},
		refusals:     map[refusal]string{},
	}
}

func (g *gate) addUser(u User) error {
	if err := validateUser(u); err != nil {
		return err
	}
	u.Prefixes, u.PullPrefixes = slices.Clone(u.Prefixes), slices.Clone(u.PullPrefixes)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.users[u.Name] = u
	return nil
}

func (g *gate) pushedBy(repo, ref string) (string, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	user, ok := g.pushers[manifestKey{repo, ref}]
	return user, ok
}

func (g *gate) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	who := g.serve(rec, req)
	g.log.Printf("%s %s %s %d", who, req.Method, req.URL.RequestURI(), rec.status)
}

// serve handles req and returns who sent it, for the log.
func (g *gate) serve(w *statusRecorder, req *http.Request) (who string) {
	user, authenticated := g.authenticate(req)
	who = "-"
	if name, _, ok := req.BasicAuth(); ok {
		who = name
	}
	if !authenticated {
		challenge(w, "invalid username or password")
		return who + " (rejected)"
	}

	rt, ok := parseRoute(req.URL.Path)
	if !ok {
		writeError(w, http.StatusNotFound, "NAME_INVALID", "not a path of the registry API")
		return who
	}
	switch rt.kind {
	case routePing:
		if user == nil {
			challenge(w, "authentication required")
			return who
		}
		g.next.ServeHTTP(w, req)
		return who
	case routeCatalog:
		writeError(w, http.StatusForbidden, "DENIED", "listing repositories is not allowed")
		return who
	}

	needed, ok := rt.needs(req.Method)
	if !ok {
		writeError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", req.Method+" is not allowed here")
		return who
	}
	if !mayAccess(user, g.publicPrefix, rt.repo, needed) {
		if user == nil {
			challenge(w, "authentication required")
		} else {
			writeError(w, http.StatusForbidden, "DENIED", "no access to repository "+rt.repo)
		}
		return who
	}
	if message, refused := g.refused(rt, req.Method, needed); refused {
		writeError(w, http.StatusForbidden, "DENIED", message)
		return who
	}
	if rt.kind == routeBlob && !g.holdsBlob(rt.repo, rt.ref) {
		writeError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown to repository")
		return who
	}

	g.next.ServeHTTP(w, req)
	g.record(rt, req.Method, w, user)
	return who
}

// authenticate returns the user that req's credentials name, nil for a request without
// credentials; ok is false for wrong credentials.
func (g *gate) authenticate(req *http.Request) (u *User, ok bool) {
	name, password, hasAuth := req.BasicAuth()
	if !hasAuth {
		return nil, req.Header.Get("Authorization") == ""
	}
	g.mu.RLock()
	known, found := g.users[name]
	if !found {
		known, found = g.tenantAccount(name)
	}
	g.mu.RUnlock()
	if !found || subtle.ConstantTimeCompare([]byte(password), []byte(known.Password)) != 1 {
		return nil, false
	}
	return &known, true
}

func (g *gate) addTenantAccounts(prefix, password string) error {
	if err := validateUser(User{Name: prefix + "x", Password: password, Prefixes: []string{prefix}}); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tenants[prefix] = password
	return nil
}

// tenantAccount is the account of a tenant name under a tenant prefix: one path segment below
// it, allowed below itself.
func (g *gate) tenantAccount(name string) (User, bool) {
	for prefix, password := range g.tenants {
		tenant, ok := strings.CutPrefix(name, prefix)
		if !ok || tenant == "" || strings.Contains(tenant, "/") {
			continue
		}
		u := User{Name: name, Password: password, Prefixes: []string{name + "/"}}
		return u, validateUser(u) == nil
	}
	return User{}, false
}

func (g *gate) holdsBlob(repo, digest string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.blobs[repo][digest]
}

// record notes a completed upload or manifest change after the upstream registry handled it.
func (g *gate) record(rt route, method string, w *statusRecorder, user *User) {
	digest := w.Header().Get("Docker-Content-Digest")
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case rt.kind == routeUpload && w.status == http.StatusCreated:
		if g.blobs[rt.repo] == nil {
			g.blobs[rt.repo] = map[string]bool{}
		}
		g.blobs[rt.repo][digest] = true
	case rt.kind == routeManifest && method == "PUT" && w.status == http.StatusCreated:
		g.pushers[manifestKey{rt.repo, rt.ref}] = user.Name
		g.pushers[manifestKey{rt.repo, digest}] = user.Name
		g.manifestPuts[rt.repo]++
	case rt.kind == routeManifest && method == "DELETE" && w.status == http.StatusAccepted:
		delete(g.pushers, manifestKey{rt.repo, rt.ref})
	}
}

// manifestsPushed counts the manifests pushed to repositories below prefix.
func (g *gate) manifestsPushed(prefix string) int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n := 0
	for repo, puts := range g.manifestPuts {
		if strings.HasPrefix(repo, prefix) {
			n += puts
		}
	}
	return n
}

// challenge answers 401 with the Basic challenge that makes clients send credentials.
func challenge(w http.ResponseWriter, message string) {
	w.Header().Set("WWW-Authenticate", authChallenge)
	writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", message)
}

// writeError writes an error in the distribution spec's format, which clients such as
// go-containerregistry's turn into readable errors.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"errors": []map[string]string{{"code": code, "message": message}},
	})
}

// statusRecorder remembers the status that the upstream registry answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// refuse makes pushes or pulls below prefix fail with message until the returned function is
// called.
func (g *gate) refuse(prefix string, what permission, message string) (restore func()) {
	key := refusal{prefix, what}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refusals[key] = message
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		delete(g.refusals, key)
	}
}

// refused says whether a request needing permission on rt is refused, and with which message.
// A pull is refused when it fetches a manifest: existence checks (HEAD) still answer, as pushing
// clients send them before uploading.
func (g *gate) refused(rt route, method string, needed permission) (string, bool) {
	if needed == pull && (rt.kind != routeManifest || method != http.MethodGet) {
		return "", false
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	for r, message := range g.refusals {
		if r.what == needed && strings.HasPrefix(rt.repo, r.prefix) {
			return message, true
		}
	}
	return "", false
}
