package registry

import "regexp"

// routeKind is the part of the distribution API that a request addresses.
type routeKind int

const (
	routePing     routeKind = iota + 1 // /v2/
	routeCatalog                       // /v2/_catalog
	routeManifest                      // /v2/<repo>/manifests/<tag or digest>
	routeBlob                          // /v2/<repo>/blobs/<digest>
	routeUpload                        // /v2/<repo>/blobs/uploads/[<session>]
	routeTags                          // /v2/<repo>/tags/list
)

// route is a parsed request path.
type route struct {
	kind routeKind
	repo string
	// ref is the manifest's tag or digest, or the blob's digest.
	ref string
}

// The grammar of the distribution spec (and of github.com/distribution/reference). Only paths
// of exactly these shapes reach the upstream handler: the gate authorizes a request by the
// repository it parsed, so it must be the repository that the upstream handler acts on.
const (
	repoPattern   = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*`
	tagPattern    = `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`
	digestPattern = `[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+`
)

var routes = []struct {
	kind    routeKind
	pattern *regexp.Regexp
}{
	{routePing, regexp.MustCompile(`^/v2/?$`)},
	{routeCatalog, regexp.MustCompile(`^/v2/_catalog$`)},
	{routeManifest, regexp.MustCompile(`^/v2/(` + repoPattern + `)/manifests/(` + tagPattern + `|` + digestPattern + `)$`)},
	// Upload sessions of go-containerregistry's registry are numbered.
	{routeUpload, regexp.MustCompile(`^/v2/(` + repoPattern + `)/blobs/uploads(?:/[0-9]*)?$`)},
	{routeBlob, regexp.MustCompile(`^/v2/(` + repoPattern + `)/blobs/(` + digestPattern + `)$`)},
	{routeTags, regexp.MustCompile(`^/v2/(` + repoPattern + `)/tags/list$`)},
}

// parseRoute parses a request path; ok is false for paths outside the API that the registry
// serves.
func parseRoute(path string) (r route, ok bool) {
	for _, candidate := range routes {
		m := candidate.pattern.FindStringSubmatch(path)
		if m == nil {
			continue
		}
		r.kind = candidate.kind
		if len(m) > 1 {
			r.repo = m[1]
		}
		if len(m) > 2 {
			r.ref = m[2]
		}
		return r, true
	}
	return route{}, false
}

// permission is what a request needs on its repository.
type permission int

const (
	pull permission = iota + 1
	push
)

// needs is the permission that method needs on the route's repository; ok is false for methods
// the registry does not allow there. Deleting blobs is not allowed at all: blobs are stored
// once per content and shared by every repository that holds them.
func (r route) needs(method string) (p permission, ok bool) {
	read := method == "GET" || method == "HEAD"
	switch r.kind {
	case routeManifest:
		if read {
			return pull, true
		}
		return push, method == "PUT" || method == "DELETE"
	case routeBlob, routeTags:
		return pull, read
	case routeUpload:
		return push, method == "POST" || method == "PATCH" || method == "PUT"
	default:
		return 0, false
	}
}
