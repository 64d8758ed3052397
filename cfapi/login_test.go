package cfapi_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"code.cloudfoundry.org/cf-hnc/cfapi"
)

var _ = Describe("cf api", func() {
	It("finds a CF API on Kubernetes at the root, without credentials, with the version pinned", func(ctx SpecContext) {
		root := decode[struct {
			CFOnK8s bool `json:"cf_on_k8s"`
			Links   map[string]*struct {
				Href string            `json:"href"`
				Meta map[string]string `json:"meta"`
			} `json:"links"`
		}](request(ctx, http.MethodGet, "/", "", nil), http.StatusOK)
		Expect(root.CFOnK8s).To(BeTrue(), "the cf CLI logs in with a kubeconfig user only then")
		Expect(root.Links["cloud_controller_v3"].Href).To(Equal(api + "/v3"))
		Expect(root.Links["cloud_controller_v3"].Meta).To(HaveKeyWithValue("version", "3.160.0+cf-hnc"),
			"the cf CLI v9 warns below 3.160.0, and lists apps differently from 3.211.0")
		Expect(root.Links["log_cache"].Href).To(Equal(api))
		Expect(root.Links).To(HaveKeyWithValue("uaa", BeNil()))

		v3 := decode[struct {
			Links map[string]link `json:"links"`
		}](request(ctx, http.MethodGet, "/v3", "", nil), http.StatusOK)
		Expect(v3.Links).To(HaveKeyWithValue("organizations", link{Href: api + "/v3/organizations"}))
	})

	It("answers CF's 'Unknown request' for what it does not serve, which the cf CLI reports as a missing endpoint", func(ctx SpecContext) {
		for _, r := range []struct{ method, path string }{
			{http.MethodGet, "/v2/info"},
			{http.MethodPut, "/v3/organizations"},
			{http.MethodGet, "/v3/service_instances"},
		} {
			Expect(cfErrorOf(request(ctx, r.method, r.path, "", nil), http.StatusNotFound)).
				To(Equal(cfError{Code: 10000, Title: "CF-NotFound", Detail: "Unknown request"}), "%s %s", r.method, r.path)
		}
	})
})

var _ = Describe("cf auth and /whoami", func() {
	It("names a user with a token as the apiserver names it", func(ctx SpecContext) {
		u := newUser(ctx, "token-user")
		Expect(decode[map[string]string](u.get(ctx, "/whoami"), http.StatusOK)).
			To(Equal(map[string]string{"name": u.Name, "kind": "ServiceAccount"}))
	})

	It("names a user with a client certificate as the apiserver names it", func(ctx SpecContext) {
		review := &authenticationv1.SelfSubjectReview{}
		Expect(k8s.Create(ctx, review)).To(Succeed())
		admin := user{authorization: clientCertAuthorization(cp.Config)}
		Expect(decode[map[string]string](admin.get(ctx, "/whoami"), http.StatusOK)).
			To(Equal(map[string]string{"name": review.Status.UserInfo.Username, "kind": "User"}))
	})

	It("refuses a client certificate over plain HTTP from another host: it carries the user's private key", func() {
		whoami := func(remote string, tlsState *tls.ConnectionState) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodGet, "/whoami", nil)
			req.RemoteAddr, req.TLS = remote, tlsState
			req.Header.Set("Authorization", clientCertAuthorization(cp.Config))
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			return rec
		}
		refused := whoami("192.0.2.10:40000", nil)
		Expect(cfErrorOf(response{status: refused.Code, body: refused.Body.Bytes()}, http.StatusUnauthorized)).To(And(
			HaveField("Title", "CF-InvalidAuthToken"), HaveField("Detail", ContainSubstring("https"))))
		Expect(whoami("192.0.2.10:40000", &tls.ConnectionState{}).Code).To(Equal(http.StatusOK), "over https")
		Expect(whoami("127.0.0.1:40000", nil).Code).To(Equal(http.StatusOK), "from this host")
	})

	It("tells a request without credentials from one with credentials it cannot read or the apiserver rejects", func(ctx SpecContext) {
		Expect(cfErrorOf(request(ctx, http.MethodGet, "/whoami", "", nil), http.StatusUnauthorized)).
			To(Equal(cfError{Code: 10002, Title: "CF-NotAuthenticated", Detail: "Authentication error"}))
		for _, authorization := range []string{
			"Basic dXNlcjpwYXNzd29yZA==",
			"Bearer",
			"ClientCert bm90IFBFTQ==",
			"Bearer not-a-token-the-apiserver-issued",
		} {
			Expect(cfErrorOf(request(ctx, http.MethodGet, "/v3/organizations", authorization, nil), http.StatusUnauthorized)).
				To(And(HaveField("Code", 1000), HaveField("Title", "CF-InvalidAuthToken")), authorization)
		}
	})

	It("remembers a user per credential for the session TTL, and asks the apiserver again after it", func(ctx SpecContext) {
		remembering, _ := startAPI(ctx, func(c *cfapi.Config) { c.SessionTTL, c.ReadyTimeout = time.Hour, time.Minute })
		u := newUser(ctx, "revoked")
		for _, target := range []string{remembering + "/whoami", api + "/whoami"} {
			Expect(u.get(ctx, target).status).To(Equal(http.StatusOK))
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: u.Namespace, Name: "revoked"}}
		Expect(k8s.Delete(ctx, sa)).To(Succeed(), "which revokes its tokens")

		Expect(decode[map[string]string](u.get(ctx, remembering+"/whoami"), http.StatusOK)).To(HaveKeyWithValue("name", u.Name),
			"an API that remembers sessions for an hour still knows the user")
		Eventually(func() int { return u.get(ctx, api+"/whoami").status }, sessionTTL+10*time.Second, 200*time.Millisecond).
			Should(Equal(http.StatusUnauthorized), "the suite's API forgets the session after %s", sessionTTL)
	})
})
