package e2e_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
)

// The CF API as config/cf-api deploys it: its pods, whose own reads have only the rights of its
// ServiceAccount, in front of the whole system, reached over HTTPS with the certificate of its
// Secret. The specs send the requests of the real cf CLI
// v8.18.4 for each command, in its order and with its bodies (from the CLI's source:
// ../shared/CF-API.md §2), as users who hold a ServiceAccount token and CF roles, nothing more.
var _ = Describe("The CF API, driven as the cf CLI drives it", Ordered, func() {
	var (
		api                string
		orgName, org       string
		space              string
		manager, developer cfAPIUser
	)

	BeforeAll(func(ctx SpecContext) {
		api = cfAPI(ctx)
		orgName = "api-" + string(uuid.NewUUID())[:8]
		org = createOrg(ctx, orgName)
		placeOrgRegistry(ctx, org)
		manager = newCFAPIUser(ctx, api, "org-manager")
		bindRole(ctx, org, manager.name, "cf-org-manager")
		developer = newCFAPIUser(ctx, api, "developer")
	})

	It("logs an org manager in (cf api, cf login): the root document, then only the orgs it has a role in", func(ctx SpecContext) {
		root := decodeAs[struct {
			Links struct {
				CloudControllerV3 struct {
					Meta struct {
						Version string `json:"version"`
					} `json:"meta"`
				} `json:"cloud_controller_v3"`
			} `json:"links"`
			CFOnK8s bool `json:"cf_on_k8s"`
		}](cfAPIUser{api: api}.do(ctx, http.MethodGet, "/", nil), http.StatusOK)
		Expect(root.CFOnK8s).To(BeTrue(), "the cf CLI's Kubernetes login")
		Expect(root.Links.CloudControllerV3.Meta.Version).To(MatchRegexp(`^3\.\d+\.\d+`))

		Eventually(func() []string {
			return cfAPINames(manager.do(ctx, http.MethodGet, "/v3/organizations?order_by=name", nil))
		}).Should(Equal([]string{orgName}), "the manager's org, and none of the other specs'")
		whoami := decodeAs[struct{ Name, Kind string }](manager.do(ctx, http.MethodGet, "/whoami", nil), http.StatusOK)
		Expect(whoami.Name).To(Equal(manager.name))
		Expect(whoami.Kind).To(Equal("ServiceAccount"))
	})

	It("creates a space (cf create-space) with the CLI's four role requests, and the creator manages and develops in it", func(ctx SpecContext) {
		Expect(manager.guidNamed(ctx, "/v3/organizations?names="+orgName+"&per_page=1&page=1")).To(Equal(org))
		created := decodeAs[cfAPIResource](manager.do(ctx, http.MethodPost, "/v3/spaces", map[string]any{
			"name": "dev", "relationships": map[string]any{"organization": cfAPIRelationship(org)},
		}), http.StatusCreated)
		space = created.GUID

		By("granting the creator the org's user role (its errors ignored, as the CLI ignores them), then the space's manager and developer roles")
		for _, role := range []struct {
			kind, place, guid string
			mustSucceed       bool
		}{
			{"organization_user", "organization", org, false},
			{"space_manager", "space", space, true},
			{"organization_user", "organization", org, false},
			{"space_developer", "space", space, true},
		} {
			r := manager.do(ctx, http.MethodPost, "/v3/roles", cfAPIRole(role.kind, role.place, role.guid, manager.name))
			if role.mustSucceed {
				Expect(r.status).To(Equal(http.StatusCreated), "%s: %s", role.kind, r.body)
			} else {
				Expect(r.status).To(BeElementOf(http.StatusCreated, http.StatusForbidden, http.StatusUnprocessableEntity), "%s: %s", role.kind, r.body)
			}
		}
		for _, role := range []string{"cf-space-manager", "cf-space-developer"} {
			Expect(cfAPIBindings(ctx, space, role)).To(ContainElement(HaveField("Subjects", ContainElement(HaveField("Name", "org-manager")))), role)
		}
		Expect(cfAPINames(manager.do(ctx, http.MethodGet, "/v3/spaces?organization_guids="+org+"&order_by=name", nil))).To(Equal([]string{"dev"}))
	})

	It("gives a developer a space role (cf set-space-role), after which the developer targets only that org and space", func(ctx SpecContext) {
		Expect(manager.do(ctx, http.MethodPost, "/v3/roles", cfAPIRole("organization_user", "organization", org, developer.name)).status).To(Equal(http.StatusCreated))
		Expect(manager.do(ctx, http.MethodPost, "/v3/roles", cfAPIRole("space_developer", "space", space, developer.name)).status).To(Equal(http.StatusCreated))

		By("cf login without -o: the orgs by name, then the org's spaces")
		Eventually(func() []string {
			return cfAPINames(developer.do(ctx, http.MethodGet, "/v3/organizations?order_by=name", nil))
		}).Should(Equal([]string{orgName}))
		Expect(cfAPINames(developer.do(ctx, http.MethodGet, "/v3/spaces?organization_guids="+org+"&order_by=name", nil))).To(Equal([]string{"dev"}))

		By("cf target -o -s: whoami, the org by name, the space by name in it")
		Expect(decodeAs[struct{ Name string }](developer.do(ctx, http.MethodGet, "/whoami", nil), http.StatusOK).Name).To(Equal(developer.name))
		Expect(developer.guidNamed(ctx, "/v3/organizations?names="+orgName+"&per_page=1&page=1")).To(Equal(org))
		Expect(developer.guidNamed(ctx, "/v3/spaces?names=dev&organization_guids="+org+"&per_page=1&page=1")).To(Equal(space))

		By("cf stacks and cf buildpacks: kpack's, which the developer may not read itself")
		Expect(cfAPINames(developer.do(ctx, http.MethodGet, "/v3/stacks", nil))).To(ContainElement(controlplane.Stack))
		Expect(cfAPINames(developer.do(ctx, http.MethodGet, "/v3/buildpacks", nil))).To(ContainElements(buildpacks.StaticfileID, buildpacks.ProcfileID))
	})

	It("pushes an app (cf push) to a running instance, lists it (cf apps) and deletes it (cf delete)", func(ctx SpecContext) {
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))

		By("apply_manifest with the manifest the CLI makes from its flags, then the app by name")
		manifest := "applications:\n- name: web\n  path: /home/dev/web\n  default-route: true\n"
		applied := developer.send(ctx, http.MethodPost, "/v3/spaces/"+space+"/actions/apply_manifest", "application/x-yaml", strings.NewReader(manifest))
		Expect(applied.status).To(Equal(http.StatusAccepted), "body: %s", applied.body)
		developer.awaitJob(ctx, applied.header.Get("Location"))
		appsByName := "/v3/apps?names=web&space_guids=" + space
		app := developer.guidNamed(ctx, appsByName)

		By("matching no resources, creating a package and uploading the zip of the app's files")
		matched := developer.do(ctx, http.MethodPost, "/v3/resource_matches", map[string]any{"resources": []any{}})
		Expect(matched.status).To(BeNumerically("<", http.StatusBadRequest), "body: %s", matched.body)
		Expect(decodeAs[struct{ Resources []any }](matched, matched.status).Resources).To(BeEmpty())
		pkg := decodeAs[cfAPIResource](developer.do(ctx, http.MethodPost, "/v3/packages", map[string]any{
			"type": "bits", "relationships": map[string]any{"app": cfAPIRelationship(app)},
		}), http.StatusCreated).GUID
		upload, contentType := cfAPIUpload("Staticfile", "", "index.html", "<h1>web</h1>\n")
		uploaded := developer.send(ctx, http.MethodPost, "/v3/packages/"+pkg+"/upload", contentType, upload)
		Expect(uploaded.status).To(BeNumerically("<", http.StatusBadRequest), "body: %s", uploaded.body)
		Eventually(func() string {
			return decodeAs[cfAPIResource](developer.do(ctx, http.MethodGet, "/v3/packages/"+pkg, nil), http.StatusOK).State
		}).Should(Equal("READY"))

		By("staging it: a build of the package, polled until STAGED, and its droplet")
		build := decodeAs[cfAPIResource](developer.do(ctx, http.MethodPost, "/v3/builds", map[string]any{"package": map[string]string{"guid": pkg}}), http.StatusCreated).GUID
		var staged cfAPIBuild
		Eventually(func() string {
			staged = decodeAs[cfAPIBuild](developer.do(ctx, http.MethodGet, "/v3/builds/"+build, nil), http.StatusOK)
			Expect(staged.State).NotTo(Equal("FAILED"), "staging failed: %s", staged.Error)
			return staged.State
		}, 5*time.Minute, 3*time.Second).Should(Equal("STAGED"))
		Expect(decodeAs[cfAPIResource](developer.do(ctx, http.MethodGet, "/v3/droplets/"+staged.Droplet.GUID, nil), http.StatusOK).GUID).To(Equal(staged.Droplet.GUID))

		By("setting the current droplet and restarting, then polling the processes' stats until an instance runs")
		Expect(developer.do(ctx, http.MethodPatch, "/v3/apps/"+app+"/relationships/current_droplet", cfAPIRelationship(staged.Droplet.GUID)).status).To(Equal(http.StatusOK))
		Expect(decodeAs[cfAPIResource](developer.do(ctx, http.MethodPost, "/v3/apps/"+app+"/actions/restart", nil), http.StatusOK).State).To(Equal("STARTED"))
		var processes cfAPIList
		Eventually(func() []string {
			processes = decodeAs[cfAPIList](developer.do(ctx, http.MethodGet, "/v3/apps/"+app+"/processes", nil), http.StatusOK)
			var states []string
			for _, p := range processes.Resources {
				stats := decodeAs[cfAPIList](developer.do(ctx, http.MethodGet, "/v3/processes/"+p.GUID+"/stats", nil), http.StatusOK)
				for _, instance := range stats.Resources {
					states = append(states, instance.State)
				}
			}
			return states
		}, 5*time.Minute, 3*time.Second).Should(ContainElement("RUNNING"))

		By("the summary the CLI prints after a push: every request answers")
		for _, target := range []string{
			appsByName,
			"/v3/processes/" + processes.Resources[0].GUID,
			"/v3/processes/" + processes.Resources[0].GUID + "/sidecars",
			"/v3/apps/" + app + "/routes",
			"/v3/apps/" + app + "/droplets/current",
			"/v3/deployments?app_guids=" + app + "&status_values=ACTIVE&order_by=-created_at&per_page=1&page=1",
		} {
			Expect(developer.do(ctx, http.MethodGet, target, nil).status).To(Equal(http.StatusOK), target)
		}

		By("the droplet's stack: the ClusterStack's name, which cf stacks lists")
		Expect(decodeAs[struct {
			Stack string `json:"stack"`
		}](developer.do(ctx, http.MethodGet, "/v3/apps/"+app+"/droplets/current", nil), http.StatusOK).Stack).To(Equal(controlplane.Stack))

		By("cf scale -i 2: the web process's scale, then the stats until both instances run")
		scaled := developer.do(ctx, http.MethodPost, "/v3/apps/"+app+"/processes/web/actions/scale", map[string]any{"instances": 2})
		Expect(scaled.status).To(Equal(http.StatusAccepted), "body: %s", scaled.body)
		Eventually(func() []string {
			var states []string
			for _, instance := range decodeAs[cfAPIList](developer.do(ctx, http.MethodGet, "/v3/processes/"+processes.Resources[0].GUID+"/stats", nil), http.StatusOK).Resources {
				states = append(states, instance.State)
			}
			return states
		}, 5*time.Minute, 3*time.Second).Should(Equal([]string{"RUNNING", "RUNNING"}))

		By("cf apps: the space's apps by name")
		Expect(decodeAs[cfAPIList](developer.do(ctx, http.MethodGet, "/v3/apps?space_guids="+space+"&order_by=name&per_page=5000", nil), http.StatusOK).Resources).
			To(ConsistOf(And(HaveField("Name", "web"), HaveField("State", "STARTED"))))

		By("cf delete: the app by name, deleted by a job that completes once it is gone")
		deleted := developer.do(ctx, http.MethodDelete, "/v3/apps/"+app, nil)
		Expect(deleted.status).To(Equal(http.StatusAccepted), "body: %s", deleted.body)
		developer.awaitJob(ctx, deleted.header.Get("Location"))
		Expect(cfAPINames(developer.do(ctx, http.MethodGet, appsByName, nil))).To(BeEmpty())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: app}, &cfv1alpha1.CFApp{})).To(BeNotFound())
	})
})

// cfAPI is the URL of the CF API of the local control plane: its pods, forwarded to loopback.
func cfAPI(SpecContext) string {
	GinkgoHelper()
	Expect(cp.CFAPIURL()).NotTo(BeEmpty(), "the control plane forwards the CF API")
	return cp.CFAPIURL()
}

// cfAPIClient trusts the CA of the CF API's certificate, as the cf CLI does with SSL_CERT_FILE.
var cfAPIClient = sync.OnceValue(func() *http.Client {
	pem, err := os.ReadFile(cp.CFAPICA())
	Expect(err).NotTo(HaveOccurred())
	roots := x509.NewCertPool()
	Expect(roots.AppendCertsFromPEM(pem)).To(BeTrue())
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
})

// cfAPIUser is a user of the CF API with a ServiceAccount token of its own, as the cf CLI sends
// it for a kubeconfig user with a token.
type cfAPIUser struct {
	api           string
	name          string // as the apiserver names the user
	authorization string
}

// newCFAPIUser makes a ServiceAccount in a namespace of its own and returns it as a user with a
// token that the apiserver issued.
func newCFAPIUser(ctx SpecContext, api, name string) cfAPIUser {
	GinkgoHelper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: createNamespace(ctx), Name: name}}
	Expect(k8s.Create(ctx, sa)).To(Succeed())
	request := &authenticationv1.TokenRequest{}
	Expect(k8s.SubResource("token").Create(ctx, sa, request)).To(Succeed())
	return cfAPIUser{
		api:           api,
		name:          "system:serviceaccount:" + sa.Namespace + ":" + sa.Name,
		authorization: "Bearer " + request.Status.Token,
	}
}

// cfAPIResponse is what the API answered.
type cfAPIResponse struct {
	status int
	header http.Header
	body   []byte
}

// do sends a JSON request as the cf CLI does (cli:api/cloudcontroller/ccv3/request.go): target
// is a path of the API or an absolute URL that the API handed out.
func (u cfAPIUser) do(ctx context.Context, method, target string, body any) cfAPIResponse {
	GinkgoHelper()
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
		reader = bytes.NewReader(data)
	}
	return u.send(ctx, method, target, "application/json", reader)
}

// send sends a request with a body of any content type.
func (u cfAPIUser) send(ctx context.Context, method, target, contentType string, body io.Reader) cfAPIResponse {
	GinkgoHelper()
	if strings.HasPrefix(target, "/") {
		target = u.api + target
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "cf/8.18.4+e2e (go; linux amd64)")
	if u.authorization != "" {
		req.Header.Set("Authorization", u.authorization)
	}
	resp, err := cfAPIClient().Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return cfAPIResponse{status: resp.StatusCode, header: resp.Header, body: data}
}

// awaitJob polls a job as the cf CLI does until it is COMPLETE, and fails if it FAILED.
func (u cfAPIUser) awaitJob(ctx context.Context, location string) {
	GinkgoHelper()
	Expect(location).NotTo(BeEmpty(), "the job's Location")
	Eventually(func() string {
		job := decodeAs[struct {
			State  string
			Errors []struct{ Detail string }
		}](u.do(ctx, http.MethodGet, location, nil), http.StatusOK)
		Expect(job.State).NotTo(Equal("FAILED"), "%+v", job.Errors)
		return job.State
	}, 2*time.Minute).Should(Equal("COMPLETE"))
}

// cfAPIUpload is the multipart body of POST /v3/packages/:guid/upload as the cf CLI sends it
// (cli:api/cloudcontroller/ccv3/package.go): the matched resources (none) and a deflate zip of
// the files, given as name, content pairs, in the file field bits.
func cfAPIUpload(files ...string) (io.Reader, string) {
	GinkgoHelper()
	zipped := &bytes.Buffer{}
	archive := zip.NewWriter(zipped)
	for i := 0; i+1 < len(files); i += 2 {
		header := &zip.FileHeader{Name: files[i], Method: zip.Deflate}
		header.SetMode(0o644)
		w, err := archive.CreateHeader(header)
		Expect(err).NotTo(HaveOccurred())
		_, err = w.Write([]byte(files[i+1]))
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(archive.Close()).To(Succeed())
	body := &bytes.Buffer{}
	form := multipart.NewWriter(body)
	Expect(form.WriteField("resources", "[]")).To(Succeed())
	bits, err := form.CreateFormFile("bits", "package.zip")
	Expect(err).NotTo(HaveOccurred())
	_, err = bits.Write(zipped.Bytes())
	Expect(err).NotTo(HaveOccurred())
	Expect(form.Close()).To(Succeed())
	return body, form.FormDataContentType()
}

// guidNamed is the GUID of the one resource of a list filtered by name.
func (u cfAPIUser) guidNamed(ctx context.Context, target string) string {
	GinkgoHelper()
	l := decodeAs[cfAPIList](u.do(ctx, http.MethodGet, target, nil), http.StatusOK)
	Expect(l.Resources).To(HaveLen(1), target)
	return l.Resources[0].GUID
}

// decodeAs reads the body of a response with the expected status.
func decodeAs[T any](r cfAPIResponse, status int) T {
	GinkgoHelper()
	Expect(r.status).To(Equal(status), "body: %s", r.body)
	var v T
	Expect(json.Unmarshal(r.body, &v)).To(Succeed(), "body: %s", r.body)
	return v
}

// The shapes of the API's answers that the specs read.
type (
	cfAPIResource struct {
		GUID  string `json:"guid"`
		Name  string `json:"name"`
		State string `json:"state"`
	}
	cfAPIList struct {
		Resources []cfAPIResource `json:"resources"`
	}
	cfAPIBuild struct {
		State   string `json:"state"`
		Error   string `json:"error"`
		Droplet struct {
			GUID string `json:"guid"`
		} `json:"droplet"`
	}
)

// cfAPINames are the names of a list's resources, in order.
func cfAPINames(r cfAPIResponse) []string {
	GinkgoHelper()
	var names []string
	for _, res := range decodeAs[cfAPIList](r, http.StatusOK).Resources {
		names = append(names, res.Name)
	}
	return names
}

func cfAPIRelationship(guid string) map[string]any {
	return map[string]any{"data": map[string]string{"guid": guid}}
}

// cfAPIRole is the body of POST /v3/roles for a user by name, as cf create-space and cf
// set-space-role send it (cli:resources/role_resource.go).
func cfAPIRole(kind, place, guid, username string) map[string]any {
	return map[string]any{"type": kind, "relationships": map[string]any{
		place:  cfAPIRelationship(guid),
		"user": map[string]any{"data": map[string]string{"username": username}},
	}}
}

// cfAPIBindings are the RoleBindings of a ClusterRole in a namespace.
func cfAPIBindings(ctx SpecContext, namespace, role string) []rbacv1.RoleBinding {
	GinkgoHelper()
	bindings := &rbacv1.RoleBindingList{}
	Expect(k8s.List(ctx, bindings, client.InNamespace(namespace))).To(Succeed())
	var found []rbacv1.RoleBinding
	for _, b := range bindings.Items {
		if b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == role {
			found = append(found, b)
		}
	}
	return found
}
