package registry_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
)

var (
	alice = &authn.Basic{Username: "alice", Password: "alice-secret"}
	bob   = &authn.Basic{Username: "bob", Password: "bob-secret"}
)

var _ = Describe("Registry", func() {
	var (
		reg  *registry.Registry
		logs *gbytes.Buffer
	)

	BeforeEach(func() {
		logs = gbytes.NewBuffer()
		var err error
		reg, err = registry.Start(context.Background(), registry.Options{Log: logs})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(reg.Close)
		Expect(reg.AddUser(registry.User{Name: "alice", Password: "alice-secret", Prefixes: []string{"org-a/"}})).To(Succeed())
		Expect(reg.AddUser(registry.User{Name: "bob", Password: "bob-secret", Prefixes: []string{"org-b/"}})).To(Succeed())
	})

	ref := func(repo string) string { return reg.Host() + "/" + repo }

	It("listens on loopback only", func() {
		Expect(reg.Host()).To(MatchRegexp(`^127\.0\.0\.1:[0-9]+$`))
	})

	It("challenges anonymous clients with Basic authentication, also on the ping", func() {
		resp := do(reg, "GET", "/v2/", nil)
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
		Expect(resp.Header.Get("WWW-Authenticate")).To(HavePrefix(`Basic realm=`))

		Expect(do(reg, "GET", "/v2/", alice).StatusCode).To(Equal(http.StatusOK))
	})

	It("lets a user push and pull under its prefixes with go-containerregistry's Basic auth", func() {
		pushed := push(ref("org-a/app:v1"), alice)

		pulled, err := pull(ref("org-a/app:v1"), alice)
		Expect(err).NotTo(HaveOccurred())
		Expect(pulled.Digest()).To(Equal(must(pushed.Digest())))
		layers := must(pulled.Layers())
		Expect(io.ReadAll(must(layers[0].Compressed()))).NotTo(BeEmpty())
	})

	It("pushes an app's source files as one layer, with the account it is given, as the CF API pushes bits", func() {
		files := map[string]string{"main.go": "package main\n", "Procfile": "web: ./app\n"}
		pushed, err := reg.PushSource(context.Background(), "org-a/packages/app", files, "alice", "alice-secret")
		Expect(err).NotTo(HaveOccurred())
		Expect(pushed).To(Equal(ref("org-a/packages/app")))
		Expect(pusher(reg, pushed)).To(Equal("alice"))

		layers := must(must(pull(pushed, alice)).Layers())
		Expect(layers).To(HaveLen(1))
		content := must(layers[0].Uncompressed())
		defer content.Close()
		read := map[string]string{}
		for r := tar.NewReader(content); ; {
			h, err := r.Next()
			if err == io.EOF {
				break
			}
			Expect(err).NotTo(HaveOccurred())
			read[h.Name] = string(must(io.ReadAll(r)))
		}
		Expect(read).To(Equal(files))

		_, err = reg.PushSource(context.Background(), "org-b/packages/app", files, "alice", "alice-secret")
		Expect(err).To(HaveOccurred(), "only under the account's prefixes")
	})

	It("says who pushed a tag or digest", func() {
		img := push(ref("org-a/app:v1"), alice)

		Expect(pusher(reg, ref("org-a/app:v1"))).To(Equal("alice"))
		Expect(pusher(reg, ref("org-a/app@"+must(img.Digest()).String()))).To(Equal("alice"))
		Expect(pusher(reg, ref("org-a/app:v2"))).To(BeEmpty())
		Expect(pusher(reg, "127.0.0.2:5000/org-a/app:v1")).To(BeEmpty())
	})

	It("counts the manifests pushed below a repository prefix", func() {
		push(ref("org-a/builders/default:v1"), alice)
		push(ref("org-a/builders/default:v2"), alice)
		push(ref("org-a/builders/default-run-image:v1"), alice)
		push(ref("org-a/app:v1"), alice)

		Expect(reg.ManifestsPushed("org-a/builders/default")).To(Equal(3))
		Expect(reg.ManifestsPushed("org-a/builders/default-run-image")).To(Equal(1))
		Expect(reg.ManifestsPushed("org-a/")).To(Equal(4))
		Expect(reg.ManifestsPushed("org-b/")).To(BeZero())
	})

	It("refuses other tenants' repositories", func() {
		push(ref("org-a/app:v1"), alice)

		_, err := pull(ref("org-a/app:v1"), bob)
		Expect(statusOf(err)).To(Equal(http.StatusForbidden))
		err = remote.Write(must(name.NewTag(ref("org-a/app:v1"))), must(random.Image(64, 1)), remote.WithAuth(bob))
		Expect(statusOf(err)).To(Equal(http.StatusForbidden))
		Expect(pusher(reg, ref("org-a/app:v1"))).To(Equal("alice"))

		_, err = pull(ref("org-a/app:v1"), authn.Anonymous)
		Expect(statusOf(err)).To(Equal(http.StatusUnauthorized))
	})

	It("gives each tenant account of a family its own repositories", func() {
		Expect(reg.AddTenantAccounts("orgs/", "tenant-secret")).To(Succeed())
		acme := &authn.Basic{Username: "orgs/acme", Password: "tenant-secret"}
		push(ref("orgs/acme/space/app:v1"), acme)
		Expect(pusher(reg, ref("orgs/acme/space/app:v1"))).To(Equal("orgs/acme"))

		globex := &authn.Basic{Username: "orgs/globex", Password: "tenant-secret"}
		err := remote.Write(must(name.NewTag(ref("orgs/acme/space/app:v2"))), must(random.Image(64, 1)), remote.WithAuth(globex))
		Expect(statusOf(err)).To(Equal(http.StatusForbidden))
		_, err = pull(ref("orgs/acme/space/app:v1"), &authn.Basic{Username: "orgs/acme", Password: "wrong"})
		Expect(statusOf(err)).To(Equal(http.StatusUnauthorized))
		_, err = pull(ref("orgs/acme/space/app:v1"), &authn.Basic{Username: "orgs/acme/space", Password: "tenant-secret"})
		Expect(statusOf(err)).To(Equal(http.StatusUnauthorized), "a tenant is one path segment below the prefix")
	})

	It("serves a blob only from repositories that received it", func() {
		img := push(ref("org-a/app:v1"), alice)
		layer := must(must(img.Layers())[0].Digest()).String()

		Expect(do(reg, "GET", "/v2/org-a/app/blobs/"+layer, alice).StatusCode).To(Equal(http.StatusOK))
		Expect(do(reg, "GET", "/v2/org-b/app/blobs/"+layer, bob).StatusCode).To(Equal(http.StatusNotFound))

		By("refusing to mount it from another tenant's repository")
		mount := do(reg, "POST", "/v2/org-b/app/blobs/uploads/?mount="+layer+"&from=org-a/app", bob)
		Expect(mount.StatusCode).NotTo(Equal(http.StatusCreated))
		Expect(do(reg, "HEAD", "/v2/org-b/app/blobs/"+layer, bob).StatusCode).To(Equal(http.StatusNotFound))
	})

	It("lets anyone pull the seeded images, and only the publisher push them", func() {
		images, err := reg.Seed(context.Background(), sources)
		Expect(err).NotTo(HaveOccurred())
		run := images.Stack.RunImage
		Expect(run.Tag).To(HavePrefix(reg.Host() + "/cnb/"))

		for _, auth := range []authn.Authenticator{authn.Anonymous, alice} {
			img, err := pull(run.Tag, auth)
			Expect(err).NotTo(HaveOccurred())
			Expect(img.Digest()).To(HaveField("String()", run.Digest))
		}
		Expect(pusher(reg, run.Tag)).To(Equal("cnb-publisher"))

		err = remote.Write(must(name.NewTag(run.Tag)), must(random.Image(64, 1)), remote.WithAuth(authn.Anonymous))
		Expect(statusOf(err)).To(Equal(http.StatusUnauthorized))
		err = remote.Write(must(name.NewTag(run.Tag)), must(random.Image(64, 1)), remote.WithAuth(alice))
		Expect(statusOf(err)).To(Equal(http.StatusForbidden))
		Expect(pusher(reg, run.Tag)).To(Equal("cnb-publisher"))
	})

	It("refuses wrong credentials, also for public images", func() {
		images, err := reg.Seed(context.Background(), sources)
		Expect(err).NotTo(HaveOccurred())

		_, err = pull(images.Stack.RunImage.Tag, &authn.Basic{Username: "alice", Password: "wrong"})
		Expect(statusOf(err)).To(Equal(http.StatusUnauthorized))
		_, err = pull(images.Stack.RunImage.Tag, &authn.Basic{Username: "mallory", Password: "x"})
		Expect(statusOf(err)).To(Equal(http.StatusUnauthorized))
	})

	It("refuses pushes below a prefix with its message while told to, and still serves pulls there", func() {
		push(ref("org-a/space/app:v1"), alice)
		restore := reg.RefusePushes("org-a/space/", "quota exceeded for this repository")

		err := remote.Write(must(name.NewTag(ref("org-a/space/app:v2"))), must(random.Image(64, 1)), remote.WithAuth(alice))
		Expect(statusOf(err)).To(Equal(http.StatusForbidden))
		Expect(err).To(MatchError(ContainSubstring("quota exceeded for this repository")))
		_, err = pull(ref("org-a/space/app:v1"), alice)
		Expect(err).NotTo(HaveOccurred())
		push(ref("org-a/other/app:v1"), alice)

		restore()
		push(ref("org-a/space/app:v2"), alice)
	})

	It("refuses pulls below a prefix with its message while told to, and still takes pushes there", func() {
		push(ref("org-a/space/app:v1"), alice)
		restore := reg.RefusePulls("org-a/space/", "the repository is quarantined")

		_, err := pull(ref("org-a/space/app:v1"), alice)
		Expect(statusOf(err)).To(Equal(http.StatusForbidden))
		Expect(err).To(MatchError(ContainSubstring("the repository is quarantined")))
		push(ref("org-a/space/app:v2"), alice)
		_, err = pull(ref("org-a/other:v1"), alice)
		Expect(statusOf(err)).To(Equal(http.StatusNotFound), "other repositories answer as before")

		restore()
		_, err = pull(ref("org-a/space/app:v2"), alice)
		Expect(err).NotTo(HaveOccurred())
	})

	It("replaces a user of the same name", func() {
		push(ref("org-a/app:v1"), alice)
		Expect(reg.AddUser(registry.User{Name: "alice", Password: "rotated", Prefixes: []string{"org-c/"}})).To(Succeed())

		_, err := pull(ref("org-a/app:v1"), alice)
		Expect(statusOf(err)).To(Equal(http.StatusUnauthorized))
		_, err = pull(ref("org-a/app:v1"), &authn.Basic{Username: "alice", Password: "rotated"})
		Expect(statusOf(err)).To(Equal(http.StatusForbidden))
	})

	It("refuses invalid and reserved users", func() {
		Expect(reg.AddUser(registry.User{Name: "carol", Password: "p", Prefixes: []string{"org-c"}})).
			To(MatchError(ContainSubstring(`"org-c" is not a repository path ending in "/"`)))
		Expect(reg.AddUser(registry.User{Name: "cnb-publisher", Password: "p"})).
			To(MatchError(ContainSubstring("reserved")))
	})

	It("refuses listing the catalog, deleting blobs and paths outside the API", func() {
		img := push(ref("org-a/app:v1"), alice)
		layer := must(must(img.Layers())[0].Digest()).String()

		Expect(do(reg, "GET", "/v2/_catalog", alice).StatusCode).To(Equal(http.StatusForbidden))
		Expect(do(reg, "DELETE", "/v2/org-a/app/blobs/"+layer, alice).StatusCode).To(Equal(http.StatusMethodNotAllowed))
		Expect(do(reg, "GET", "/v2/org-a/app/blobs/"+layer, alice).StatusCode).To(Equal(http.StatusOK))
		Expect(do(reg, "GET", "/v2/org-a/../org-b/manifests/v1", alice).StatusCode).To(Equal(http.StatusNotFound))
	})

	It("logs every request with its user and status", func() {
		push(ref("org-a/app:v1"), alice)
		_, _ = pull(ref("org-b/app:v1"), alice)

		Expect(logs).To(gbytes.Say(`alice PUT /v2/org-a/app/manifests/v1 201`))
		Expect(logs).To(gbytes.Say(`alice GET /v2/org-b/app/manifests/v1 403`))
	})

	It("stops serving when closed", func() {
		Expect(reg.Close()).To(Succeed())
		_, err := http.Get("http://" + reg.Host() + "/v2/")
		Expect(err).To(HaveOccurred())
		Expect(reg.Close()).To(Succeed())
	})

	It("stops serving when its context ends", func() {
		ctx, cancel := context.WithCancel(context.Background())
		r, err := registry.Start(ctx, registry.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(do(r, "GET", "/v2/", nil).StatusCode).To(Equal(http.StatusUnauthorized))

		cancel()
		Eventually(func() error {
			_, err := http.Get("http://" + r.Host() + "/v2/")
			return err
		}).Should(HaveOccurred())
	})
})

// push writes a small random image to ref with auth and fails the spec if that fails.
func push(ref string, auth authn.Authenticator) v1.Image {
	GinkgoHelper()
	img := must(random.Image(256, 2))
	Expect(remote.Write(must(name.NewTag(ref)), img, remote.WithAuth(auth))).To(Succeed())
	return img
}

// pull reads ref's manifest and config with auth, as kpack's registry client does.
func pull(ref string, auth authn.Authenticator) (v1.Image, error) {
	img, err := remote.Image(must(name.ParseReference(ref)), remote.WithAuth(auth))
	if err != nil {
		return nil, err
	}
	_, err = img.ConfigFile()
	return img, err
}

// do sends a raw request to reg, with Basic credentials unless auth is nil.
func do(reg *registry.Registry, method, path string, auth *authn.Basic) *http.Response {
	GinkgoHelper()
	req := must(http.NewRequest(method, "http://"+reg.Host()+path, nil))
	if auth != nil {
		req.SetBasicAuth(auth.Username, auth.Password)
	}
	resp := must(http.DefaultClient.Do(req))
	DeferCleanup(resp.Body.Close)
	return resp
}

// pusher is the user who pushed ref, "" if PushedBy does not know.
func pusher(reg *registry.Registry, ref string) string {
	user, ok := reg.PushedBy(ref)
	if !ok {
		return ""
	}
	Expect(user).NotTo(BeEmpty())
	return user
}

// statusOf is the HTTP status of a go-containerregistry error, 0 for other errors.
func statusOf(err error) int {
	var terr *transport.Error
	if errors.As(err, &terr) {
		return terr.StatusCode
	}
	return 0
}

func must[T any](v T, err error) T {
	GinkgoHelper()
	Expect(err).NotTo(HaveOccurred())
	return v
}
