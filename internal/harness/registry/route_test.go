package registry

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var _ = DescribeTable("parseRoute",
	func(path string, want route, wantOK bool) {
		got, ok := parseRoute(path)
		Expect(ok).To(Equal(wantOK))
		Expect(got).To(Equal(want))
	},
	Entry("ping", "/v2/", route{kind: routePing}, true),
	Entry("ping without slash", "/v2", route{kind: routePing}, true),
	Entry("catalog", "/v2/_catalog", route{kind: routeCatalog}, true),
	Entry("manifest by tag", "/v2/org-a/app/manifests/latest", route{routeManifest, "org-a/app", "latest"}, true),
	Entry("manifest by digest", "/v2/org-a/app/manifests/"+digest, route{routeManifest, "org-a/app", digest}, true),
	Entry("blob", "/v2/cnb/stack/run/blobs/"+digest, route{routeBlob, "cnb/stack/run", digest}, true),
	Entry("upload start", "/v2/org-a/app/blobs/uploads/", route{routeUpload, "org-a/app", ""}, true),
	Entry("upload start without slash", "/v2/org-a/app/blobs/uploads", route{routeUpload, "org-a/app", ""}, true),
	Entry("upload session", "/v2/org-a/app/blobs/uploads/8674665223082153551", route{routeUpload, "org-a/app", ""}, true),
	Entry("tags", "/v2/org-a/app/tags/list", route{routeTags, "org-a/app", ""}, true),
	// Repositories may have components named like API keywords; the repository must still be
	// the one that go-containerregistry's handler acts on.
	Entry("repository ending in blobs", "/v2/org-a/blobs/manifests/v1", route{routeManifest, "org-a/blobs", "v1"}, true),
	Entry("blob of a repository ending in blobs/uploads", "/v2/org-a/blobs/uploads/blobs/"+digest, route{routeBlob, "org-a/blobs/uploads", digest}, true),
	Entry("upload of a repository ending in blobs/uploads", "/v2/org-a/blobs/uploads/blobs/uploads/1", route{routeUpload, "org-a/blobs/uploads", ""}, true),
	Entry("upper-case repository", "/v2/Org-A/app/manifests/v1", route{}, false),
	Entry("path traversal", "/v2/org-a/../org-b/app/manifests/v1", route{}, false),
	Entry("empty path component", "/v2/org-a//app/manifests/v1", route{}, false),
	Entry("blob without digest", "/v2/org-a/app/blobs/latest", route{}, false),
	Entry("non-numeric upload session", "/v2/org-a/app/blobs/uploads/abc", route{}, false),
	Entry("referrers", "/v2/org-a/app/referrers/"+digest, route{}, false),
	Entry("outside the API", "/metrics", route{}, false),
)

var _ = DescribeTable("route.needs",
	func(kind routeKind, method string, want permission, wantOK bool) {
		got, ok := route{kind: kind, repo: "org-a/app"}.needs(method)
		Expect(ok).To(Equal(wantOK))
		if wantOK {
			Expect(got).To(Equal(want))
		}
	},
	Entry("manifest GET", routeManifest, "GET", pull, true),
	Entry("manifest HEAD", routeManifest, "HEAD", pull, true),
	Entry("manifest PUT", routeManifest, "PUT", push, true),
	Entry("manifest DELETE", routeManifest, "DELETE", push, true),
	Entry("manifest POST", routeManifest, "POST", permission(0), false),
	Entry("blob GET", routeBlob, "GET", pull, true),
	Entry("blob HEAD", routeBlob, "HEAD", pull, true),
	Entry("blob DELETE", routeBlob, "DELETE", permission(0), false),
	Entry("upload POST", routeUpload, "POST", push, true),
	Entry("upload PATCH", routeUpload, "PATCH", push, true),
	Entry("upload PUT", routeUpload, "PUT", push, true),
	Entry("upload GET", routeUpload, "GET", permission(0), false),
	Entry("tags GET", routeTags, "GET", pull, true),
	Entry("tags PUT", routeTags, "PUT", permission(0), false),
)
