package cfapi_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

const root = testenv.RootNamespace

// sessionTTL is the API's identity cache in the suite: short, so that a spec sees it expire.
const sessionTTL = 2 * time.Second

var (
	cp  *controlplane.ControlPlane
	k8s client.Client
	// api is the API server's URL, on loopback, as `cf api` is given it.
	api string
	// handler is the API's handler, for requests that no loopback connection can make.
	handler http.Handler
	// apiConfig is the API's own connection: its ServiceAccount's token.
	apiConfig *rest.Config
)

func TestCFAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "cfapi (apiserver, kube-controller-manager, HNC, cf-hnc's reconcilers)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	cp = testenv.Start(ctx, "cfapi")
	k8s = cp.Client
	cftest.ApplyCFRoles(ctx, k8s, filepath.Join("..", "config"))

	apiConfig = apiServiceAccount(ctx)
	api, handler = startAPI(ctx, func(*cfapi.Config) {})
}, NodeTimeout(5*time.Minute))

// startAPI serves the API on loopback, as the suite installs it but for what configure changes,
// with its own ServiceAccount's rights, until the suite ends; it returns the API's URL and
// handler.
func startAPI(ctx context.Context, configure func(*cfapi.Config)) (string, http.Handler) {
	GinkgoHelper()
	apiCtx, stop := context.WithCancel(context.Background())
	DeferCleanup(stop)
	cfg := cfapi.Config{
		RootNamespace: root,
		SessionTTL:    sessionTTL,
		ReadyTimeout:  30 * time.Second,
		DeleteTimeout: time.Minute,
		Log:           GinkgoLogr,
	}
	configure(&cfg)
	h, err := cfapi.New(apiCtx, apiConfig, cfg)
	Expect(err).NotTo(HaveOccurred())
	server := httptest.NewServer(h)
	DeferCleanup(server.Close)
	return server.URL, h
}

var _ = AfterEach(testenv.ExpectHealthy)

// apiReaderRules are the rights of the API's own ServiceAccount, the least it runs with:
// reading the orgs, the spaces and the RoleBindings (the cache lists and watches them; a
// delete job gets an org and lists a space by name), and listing kpack's ClusterStacks and
// ClusterStores (stacks and buildpacks), nothing else. The ClusterRole that ships with the
// API must grant the same.
var apiReaderRules = []rbacv1.PolicyRule{
	{APIGroups: []string{cfv1alpha1.GroupVersion.Group}, Resources: []string{"cforgs"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{cfv1alpha1.GroupVersion.Group}, Resources: []string{"cfspaces"}, Verbs: []string{"list", "watch"}},
	{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}, Verbs: []string{"list", "watch"}},
	{APIGroups: []string{"kpack.io"}, Resources: []string{"clusterstacks", "clusterstores"}, Verbs: []string{"list"}},
}

// apiServiceAccount makes the API's ServiceAccount with only apiReaderRules and returns a
// connection with its token: the API runs with no right beyond them.
func apiServiceAccount(ctx context.Context) *rest.Config {
	const namespace, name = "cf-api-system", "cf-api"
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cf-hnc:api"}, Rules: apiReaderRules})).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cf-hnc:api"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cf-hnc:api"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
	})).To(Succeed())
	config := rest.AnonymousClientConfig(cp.Config)
	config.BearerToken = cftest.Token(ctx, k8s, namespace, name)
	return config
}

// user is a test user (cftest.User) and the Authorization header that the cf CLI sends for
// them.
type user struct {
	cftest.User
	authorization string
}

// newUser makes a user with a token of a ServiceAccount of its own namespace.
func newUser(ctx context.Context, name string) user {
	GinkgoHelper()
	u := cftest.NewUser(ctx, k8s, name)
	return user{User: u, authorization: u.Authorization()}
}

// clientCertAuthorization is the Authorization header that the cf CLI sends for a kubeconfig
// user with a client certificate (cli:api/shared/wrap_for_cf_on_k8s.go): the leaf certificate
// and the private key re-marshalled as PKCS#8, both PEM, base64-encoded.
func clientCertAuthorization(config *rest.Config) string {
	GinkgoHelper()
	pair, err := tls.X509KeyPair(config.CertData, config.KeyData)
	Expect(err).NotTo(HaveOccurred())
	key, err := x509.MarshalPKCS8PrivateKey(pair.PrivateKey)
	Expect(err).NotTo(HaveOccurred())
	bundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: pair.Certificate[0]})
	bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})...)
	return "ClientCert " + base64.StdEncoding.EncodeToString(bundle)
}

// bind binds a subject to a CF role in a namespace, as an org manager or an operator would.
func bind(ctx context.Context, namespace, role string, subject rbacv1.Subject) *rbacv1.RoleBinding {
	GinkgoHelper()
	return cftest.Bind(ctx, k8s, namespace, role, subject)
}

// operator makes a user bound cluster-wide to cf-operator, as the people who run the
// foundation are.
func operator(ctx context.Context) user {
	GinkgoHelper()
	u := cftest.Operator(ctx, k8s)
	return user{User: u, authorization: u.Authorization()}
}

// response is what the API answered.
type response struct {
	status int
	header http.Header
	body   []byte
}

// request sends a request as the cf CLI sends it (cli:api/cloudcontroller/ccv3/request.go),
// with authorization as its Authorization header unless it is empty; target is a path of the
// API or an absolute URL that the API handed out.
func request(ctx context.Context, method, target, authorization string, body any) response {
	GinkgoHelper()
	if target[0] == '/' {
		target = api + target
	}
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, reader)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "cf/8.18.4+cfapi-suite (go; linux amd64)")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

func (u user) get(ctx context.Context, target string) response {
	return request(ctx, http.MethodGet, target, u.authorization, nil)
}

func (u user) post(ctx context.Context, target string, body any) response {
	return request(ctx, http.MethodPost, target, u.authorization, body)
}

func (u user) delete(ctx context.Context, target string) response {
	return request(ctx, http.MethodDelete, target, u.authorization, nil)
}

// decode reads the body of a response with the expected status.
func decode[T any](r response, status int) T {
	GinkgoHelper()
	Expect(r.status).To(Equal(status), "body: %s", r.body)
	var v T
	Expect(json.Unmarshal(r.body, &v)).To(Succeed(), "body: %s", r.body)
	return v
}

// The shapes that the cf CLI reads.
type (
	link struct {
		Href string `json:"href"`
	}
	relationship struct {
		Data *struct {
			GUID string `json:"guid"`
		} `json:"data"`
	}
	resource struct {
		GUID          string                  `json:"guid"`
		Name          string                  `json:"name"`
		CreatedAt     time.Time               `json:"created_at"`
		UpdatedAt     time.Time               `json:"updated_at"`
		Suspended     *bool                   `json:"suspended"`
		Relationships map[string]relationship `json:"relationships"`
		Links         map[string]link         `json:"links"`
		Metadata      struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	list struct {
		Pagination struct {
			TotalResults int   `json:"total_results"`
			TotalPages   int   `json:"total_pages"`
			First        link  `json:"first"`
			Last         link  `json:"last"`
			Next         *link `json:"next"`
			Previous     *link `json:"previous"`
		} `json:"pagination"`
		Resources []resource `json:"resources"`
	}
	cfError struct {
		Code   int    `json:"code"`
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	job struct {
		GUID      string    `json:"guid"`
		Operation string    `json:"operation"`
		State     string    `json:"state"`
		Errors    []cfError `json:"errors"`
		Links     map[string]link
	}
)

// cfErrorOf reads the one error of an error response with the expected status.
func cfErrorOf(r response, status int) cfError {
	GinkgoHelper()
	body := decode[struct {
		Errors []cfError `json:"errors"`
	}](r, status)
	Expect(body.Errors).To(HaveLen(1))
	return body.Errors[0]
}

// names are the names of a list's resources, in order.
func names(l list) []string {
	var n []string
	for _, r := range l.Resources {
		n = append(n, r.Name)
	}
	return n
}
