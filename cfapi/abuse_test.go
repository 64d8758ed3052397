package cfapi_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

// The specs of security review 3 (docs/security.md): each acts as the tenant or the stranger of
// the finding, through the API as the cf CLI reaches it, and fails without its control.

// rawRequest starts a request to the API at base on a connection of its own: its head, with
// body's first bytes of a body of length bytes, and leaves the rest unsent. It returns the
// connection, to read the answer from or to close.
func rawRequest(base, method, path, authorization, contentType string, length int, body []byte) (net.Conn, *bufio.Reader) {
	GinkgoHelper()
	u, err := url.Parse(base)
	Expect(err).NotTo(HaveOccurred())
	conn, err := net.Dial("tcp", u.Host)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(conn.Close)
	_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		method, path, u.Host, authorization, contentType, length)
	Expect(err).NotTo(HaveOccurred())
	_, err = conn.Write(body)
	Expect(err).NotTo(HaveOccurred())
	return conn, bufio.NewReader(conn)
}

// answerOf reads the answer on a connection within a deadline.
func answerOf(conn net.Conn, reader *bufio.Reader, within time.Duration) response {
	GinkgoHelper()
	Expect(conn.SetReadDeadline(time.Now().Add(within))).To(Succeed())
	answer, err := http.ReadResponse(reader, nil)
	Expect(err).NotTo(HaveOccurred(), "an answer within %s", within)
	defer answer.Body.Close()
	body, err := io.ReadAll(answer.Body)
	Expect(err).NotTo(HaveOccurred())
	return response{status: answer.StatusCode, header: answer.Header, body: body}
}

// stalledUpload starts an upload of a package as the cf CLI sends it, and stops in the middle
// of the zip.
func stalledUpload(base, authorization, pkg string) (net.Conn, *bufio.Reader) {
	GinkgoHelper()
	var head bytes.Buffer
	form := multipart.NewWriter(&head)
	Expect(form.WriteField("resources", "[]")).To(Succeed())
	_, err := form.CreateFormFile("bits", "package.zip")
	Expect(err).NotTo(HaveOccurred())
	head.WriteString("PK\x03\x04")
	return rawRequest(base, http.MethodPost, "/v3/packages/"+pkg+"/upload", authorization, form.FormDataContentType(), 1<<20, head.Bytes())
}

var _ = Describe("N7, N8: uploads into a space with a registry, under abuse", Ordered, func() {
	var (
		space, org string
		developer  user
		web        *cfv1alpha1.CFApp
	)

	BeforeAll(func(ctx SpecContext) {
		reg, err := registry.Start(context.Background(), registry.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(reg.Close)
		org, space, developer = developedSpace(ctx, "abuse-org-manager", "abuse")
		cftest.PlaceRegistry(ctx, k8s, reg, org, space)
		web = cftest.CreateApp(ctx, k8s, space, "web", cfv1alpha1.StoppedState)
	})

	createPackage := func(ctx context.Context, u user) string {
		GinkgoHelper()
		return decode[cfPackage](u.post(ctx, "/v3/packages", packageBody(web.Name)), http.StatusCreated).GUID
	}

	It("N7: refuses, as a space developer's upload, a zip of more entries than an app has, and keeps the package waiting for its bits", func(ctx SpecContext) {
		var bits bytes.Buffer
		w := zip.NewWriter(&bits)
		for i := range cf.MaxZipEntries + 1 {
			_, err := w.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("f%06d", i), Method: zip.Store})
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(w.Close()).To(Succeed())
		pkg := createPackage(ctx, developer)
		Expect(cfErrorOf(developer.upload(ctx, pkg, bits.Bytes()), http.StatusUnprocessableEntity)).To(Equal(cfError{
			Code: 150001, Title: "CF-AppPackageInvalid", Detail: "The app package is invalid: invalid package zip: it has more than 100000 entries"}))
		Expect(decode[cfPackage](developer.get(ctx, "/v3/packages/"+pkg), http.StatusOK).State).To(Equal("AWAITING_UPLOAD"))
	})

	It("N7: answers a filter that names one org ten thousand times as it answers the org named once", func(ctx SpecContext) {
		stranger := newUser(ctx, "filter-repeater")
		bind(ctx, org, "cf-org-user", stranger.Subject())
		once := decode[list](stranger.get(ctx, "/v3/spaces?organization_guids="+org), http.StatusOK)
		Expect(names(once)).To(Equal([]string{"abuse"}))
		repeated := decode[list](stranger.get(ctx, "/v3/spaces?organization_guids="+strings.TrimSuffix(strings.Repeat(org+",", 10_000), ",")), http.StatusOK)
		Expect(repeated.Pagination.TotalResults).To(Equal(1))
		Expect(names(repeated)).To(Equal(names(once)))

		distinct := make([]string, 501)
		for i := range distinct {
			distinct[i] = string(uuid.NewUUID())
		}
		Expect(cfErrorOf(stranger.get(ctx, "/v3/spaces?organization_guids="+strings.Join(distinct, ",")), http.StatusBadRequest)).To(Equal(cfError{
			Code: 10005, Title: "CF-BadQueryParameter",
			Detail: "The query parameter is invalid: 'organization_guids' may name at most 500 distinct values"}))
	})

	It("N8: ends an upload whose bytes stop coming", func(ctx SpecContext) {
		quick, _ := startAPI(ctx, func(c *cfapi.Config) { c.ReadTimeout = time.Second })
		conn, reader := stalledUpload(quick, developer.authorization, createPackage(ctx, developer))
		Expect(cfErrorOf(answerOf(conn, reader, 10*time.Second), http.StatusBadRequest)).To(And(HaveField("Title", "CF-AppBitsUploadInvalid"),
			HaveField("Detail", ContainSubstring("no bytes of the upload came for 1s"))))
	})

	It("N7: serves one user at most half of the uploads it serves at once, and the others the rest", func(ctx SpecContext) {
		limited, _ := startAPI(ctx, func(c *cfapi.Config) { c.MaxUploads = 2 })
		Expect(developer.get(ctx, limited+"/whoami").status).To(Equal(http.StatusOK), "a session, so that the first upload is in at once")
		first, answer := stalledUpload(limited, developer.authorization, createPackage(ctx, developer))
		Eventually(func() int { return developer.uploadTo(ctx, limited, string(uuid.NewUUID()), nil).status }).Should(
			Equal(http.StatusTooManyRequests), "while the developer's first upload is in progress")
		refused := developer.uploadTo(ctx, limited, createPackage(ctx, developer), zipOf(zipEntry{"Procfile", 0o644, "web: x\n"}))
		Expect(refused.header.Get("Retry-After")).To(Equal("5"))
		Expect(cfErrorOf(refused, http.StatusTooManyRequests)).To(And(HaveField("Code", 10013), HaveField("Title", "CF-RateLimitExceeded"),
			HaveField("Detail", ContainSubstring("You have 1 uploads in progress on this replica of the CF API, as many as one user may"))))

		teammate := newUser(ctx, "teammate")
		bind(ctx, space, "cf-space-developer", teammate.Subject())
		for _, base := range []string{api, limited} {
			Eventually(func() int { return teammate.get(ctx, base+"/v3/spaces/"+space).status }).Should(Equal(http.StatusOK))
		}
		Expect(decode[cfPackage](teammate.uploadTo(ctx, limited, createPackage(ctx, teammate), zipOf(zipEntry{"Procfile", 0o644, "web: x\n"})),
			http.StatusOK).State).To(Equal("READY"))

		Expect(first.SetReadDeadline(time.Now().Add(100 * time.Millisecond))).To(Succeed())
		_, err := answer.Peek(1)
		Expect(err).To(MatchError(os.ErrDeadlineExceeded), "the first upload was in progress all along")
	})
})

var _ = Describe("N8: unknown credentials and slow clients", func() {
	It("reviews credentials it has not seen at a bounded rate, answers the rest 429, and remembers refusals", func(ctx SpecContext) {
		bounded, _ := startAPI(ctx, func(c *cfapi.Config) { c.Reviews.PerSecond, c.Reviews.Burst, c.SessionTTL = 1, 5, time.Hour })
		known := newUser(ctx, "known")
		Expect(known.get(ctx, bounded+"/whoami").status).To(Equal(http.StatusOK))

		start := time.Now()
		statuses := map[int]int{}
		var first string
		for i := range 200 {
			authorization := "Bearer flood-" + string(uuid.NewUUID())
			if i == 0 {
				first = authorization
			}
			r := request(ctx, http.MethodGet, bounded+"/v3/organizations", authorization, nil)
			statuses[r.status]++
			if r.status == http.StatusTooManyRequests {
				Expect(r.header.Get("Retry-After")).To(Equal("1"))
				Expect(cfErrorOf(r, http.StatusTooManyRequests)).To(And(HaveField("Code", 10013), HaveField("Title", "CF-RateLimitExceeded")))
			}
		}
		reviewed := 5 + int(time.Since(start)/time.Second) + 1
		Expect(statuses[http.StatusUnauthorized]).To(BeNumerically("<=", reviewed), "each 401 is one SelfSubjectReview")
		Expect(statuses[http.StatusTooManyRequests]).To(BeNumerically(">=", 200-reviewed))
		Expect(statuses).To(HaveLen(2))

		Expect(cfErrorOf(request(ctx, http.MethodGet, bounded+"/v3/organizations", first, nil), http.StatusUnauthorized).Title).To(Equal("CF-InvalidAuthToken"),
			"a refusal is remembered, and answered without a review")
		Expect(known.get(ctx, bounded+"/whoami").status).To(Equal(http.StatusOK), "a session already made is not reviewed again")
	})

	It("answers a request whose body does not come in time, rather than waiting for it", func(ctx SpecContext) {
		quick, _ := startAPI(ctx, func(c *cfapi.Config) { c.ReadTimeout = time.Second })
		op := operator(ctx)
		Expect(op.get(ctx, quick+"/whoami").status).To(Equal(http.StatusOK))
		conn, reader := rawRequest(quick, http.MethodPost, "/v3/organizations", op.authorization, "application/json", 100, []byte(`{"name":`))
		Expect(cfErrorOf(answerOf(conn, reader, 10*time.Second), http.StatusBadRequest)).To(Equal(cfError{
			Code: 1001, Title: "CF-MessageParseError", Detail: "Request invalid due to parse error: the request's body did not come within 1s"}))
	})
})

var _ = Describe("N9: a space GUID taken by another org", func() {
	It("answers the space of the org the tree made it in, to its members each time, and nothing of the squat", func(ctx SpecContext) {
		orgA, squatter := managedOrg(ctx, "squatter")
		orgB := testenv.CreateOrg(ctx, k8s, unique("victim"))
		space := testenv.CreateSpace(ctx, k8s, orgB, "space-b")
		member := newUser(ctx, "victim-developer")
		bind(ctx, space, "cf-space-developer", member.Subject())
		orgBName := decode[resource](operator(ctx).get(ctx, "/v3/organizations/"+orgB), http.StatusOK).Name
		Eventually(listed(ctx, member, orgQuery)).Should(Equal([]string{orgBName}))

		squat := &cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Namespace: orgA, Name: space},
			Spec: cfv1alpha1.CFSpaceSpec{DisplayName: "re-login at https://evil.example"}}
		Expect(squatter.Client(cp.Config).Create(ctx, squat)).To(Succeed(), "the org manager's own org takes the other org's space GUID")
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, squat))).To(Succeed()) })
		expectTheTreesSpace := func() {
			GinkgoHelper()
			for range 20 {
				got := decode[resource](member.get(ctx, "/v3/spaces/"+space), http.StatusOK)
				Expect(got.Name).To(Equal("space-b"))
				Expect(got.Relationships["organization"].Data).To(HaveField("GUID", orgB))
			}
			Expect(listed(ctx, member, orgQuery)()).To(Equal([]string{orgBName}))
			Expect(listed(ctx, member, "/v3/spaces")()).To(Equal([]string{"space-b"}))
			Expect(cfErrorOf(squatter.get(ctx, "/v3/spaces/"+space), http.StatusNotFound).Detail).To(Equal("Space not found"))
			Expect(listed(ctx, squatter, spacesOf(orgA))()).To(BeEmpty())
		}
		By("before cf-hnc has reported the squat")
		Eventually(func(g Gomega) {
			spaces := &cfv1alpha1.CFSpaceList{}
			g.Expect(k8s.List(ctx, spaces, client.MatchingFields{"metadata.name": space})).To(Succeed())
			g.Expect(spaces.Items).To(HaveLen(2))
		}).Should(Succeed())
		expectTheTreesSpace()
		By("once cf-hnc has reported that its anchor conflicts with the space's namespace")
		Eventually(func() *metav1.Condition {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(squat), squat)).To(Succeed())
			return meta.FindStatusCondition(squat.Status.Conditions, cfv1alpha1.ReadyCondition)
		}).Should(HaveField("Reason", cfv1alpha1.AnchorConflictReason))
		expectTheTreesSpace()
	})
})

var _ = Describe("N14: the name of an org role's RoleBinding", func() {
	It("cannot be taken beforehand by a space manager, so that the org manager's grant reaches every space", func(ctx SpecContext) {
		org, manager := managedOrg(ctx, "granting-org-manager")
		space := testenv.CreateSpace(ctx, k8s, org, "squatted")
		spaceManager := newUser(ctx, "squatting-space-manager")
		bind(ctx, space, "cf-space-manager", spaceManager.Subject())
		// The name the API gave a grant of organization_user to bob before: the role and a hash of
		// the subject, which anybody could compute.
		sum := sha256.Sum256([]byte("User\x00\x00bob"))
		squat := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "cf-org-user-" + hex.EncodeToString(sum[:])[:16]},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cf-space-auditor"},
			Subjects:   []rbacv1.Subject{spaceManager.Subject()},
		}
		Eventually(func() error { return spaceManager.Client(cp.Config).Create(ctx, squat) }).Should(Succeed())

		Expect(manager.post(ctx, "/v3/roles", roleBody("organization_user", "organization", org, "bob")).status).To(Equal(http.StatusCreated))
		Eventually(func(g Gomega) {
			bindings := &rbacv1.RoleBindingList{}
			g.Expect(k8s.List(ctx, bindings, client.InNamespace(space))).To(Succeed())
			g.Expect(bindings.Items).To(ContainElement(And(HaveField("RoleRef.Name", "cf-org-user"),
				HaveField("Subjects", ContainElement(HaveField("Name", "bob"))))), "HNC's copy of the grant in the space")
		}).Should(Succeed())
	})
})

var _ = Describe("N15: delete jobs", func() {
	It("answer a user who sees no org or space the same for one that exists as for a GUID that names nothing", func(ctx SpecContext) {
		org := testenv.CreateOrg(ctx, k8s, unique("job-oracle"))
		space := testenv.CreateSpace(ctx, k8s, org, "hidden")
		stranger := newUser(ctx, "job-prober")
		for _, operation := range []string{"org.delete", "space.delete"} {
			existing := map[string]string{"org.delete": org, "space.delete": space}[operation]
			for _, guid := range []string{existing, string(uuid.NewUUID())} {
				j := decode[job](stranger.get(ctx, "/v3/jobs/"+operation+"~"+guid), http.StatusOK)
				Expect(j.State).To(Equal("COMPLETE"), "%s~%s", operation, guid)
				Expect(j.Errors).To(BeEmpty())
			}
		}
		By("a member of the org still learns that its space is not being deleted")
		member := newUser(ctx, "job-member")
		bind(ctx, org, "cf-org-user", member.Subject())
		Eventually(func() []cfError {
			return decode[job](member.get(ctx, "/v3/jobs/space.delete~"+space), http.StatusOK).Errors
		}).Should(
			ConsistOf(HaveField("Detail", "Space "+space+" is not being deleted")))
	})
})

var _ = Describe("N16: a page past what the API can count", func() {
	It("is CF's bad query parameter, and the API goes on", func(ctx SpecContext) {
		u := newUser(ctx, "pager")
		for _, path := range []string{"/v3/routes", "/v3/spaces", "/v3/apps"} {
			Expect(cfErrorOf(u.get(ctx, path+"?page=4611686018427387905&per_page=2"), http.StatusBadRequest)).To(Equal(cfError{
				Code: 10005, Title: "CF-BadQueryParameter", Detail: "The query parameter is invalid: Page must be between 1 and 1844674407370955"}), path)
		}
		Expect(u.get(ctx, "/v3/routes").status).To(Equal(http.StatusOK))
	})
})

var _ = Describe("N17: links", func() {
	It("lead to the API's external URL, whatever Host a request names", func(ctx SpecContext) {
		external := &url.URL{Scheme: "https", Host: "api.cf.example.com"}
		linked, _ := startAPI(ctx, func(c *cfapi.Config) { c.ExternalURL = external })
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, linked+"/", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Host = "evil.example"
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).To(ContainSubstring(`"href":"https://api.cf.example.com/v3"`))
		Expect(string(body)).NotTo(ContainSubstring("evil.example"))
	})
})

var _ = Describe("N18: what every user of a replica shares", func() {
	It("keeps the other users' sessions whatever one user sends, two thousand spellings of one token among it", func(ctx SpecContext) {
		remembering, _ := startAPI(ctx, func(c *cfapi.Config) { c.SessionTTL = time.Hour })
		victim, flooder := newUser(ctx, "remembered"), newUser(ctx, "flooder")
		Expect(victim.get(ctx, remembering+"/whoami").status).To(Equal(http.StatusOK))
		Expect(k8s.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: victim.Namespace, Name: "remembered"}})).To(Succeed(),
			"which revokes its token: only a remembered session still knows the victim")
		Eventually(func() error { return victim.Client(cp.Config).Create(ctx, &authenticationv1.SelfSubjectReview{}) }).Should(
			Satisfy(apierrors.IsUnauthorized), "once the apiserver has forgotten the token too")

		for i := range 2000 {
			spelling := "Bearer" + strings.Repeat(" ", i+1) + flooder.Token
			Expect(request(ctx, http.MethodGet, remembering+"/whoami", spelling, nil).status).To(Equal(http.StatusOK))
		}
		Expect(decode[map[string]string](victim.get(ctx, remembering+"/whoami"), http.StatusOK)).To(HaveKeyWithValue("name", victim.Name))
	})

	It("gives each user a share of the reads made with the API's own rights", func(ctx SpecContext) {
		shared, _ := startAPI(ctx, func(*cfapi.Config) {})
		greedy, other := newUser(ctx, "greedy"), newUser(ctx, "patient")
		var refused response
		Eventually(func() int {
			refused = greedy.get(ctx, shared+"/v3/stacks")
			return refused.status
		}).Should(Equal(http.StatusTooManyRequests))
		Expect(refused.header.Get("Retry-After")).To(Equal("1"))
		Expect(cfErrorOf(refused, http.StatusTooManyRequests).Title).To(Equal("CF-RateLimitExceeded"))
		Expect(other.get(ctx, shared+"/v3/stacks").status).To(Equal(http.StatusOK))
	})
})
