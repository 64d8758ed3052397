package cfapi_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
)

// The shapes of apps, processes and instances that the cf CLI reads
// (cli:resources/application_resource.go, process_resource.go, ccv3/process_instance.go).
type (
	app struct {
		GUID      string `json:"guid"`
		Name      string `json:"name"`
		State     string `json:"state"`
		Lifecycle struct {
			Type string `json:"type"`
			Data struct {
				Buildpacks []string `json:"buildpacks"`
				Stack      string   `json:"stack"`
			} `json:"data"`
		} `json:"lifecycle"`
		Relationships map[string]relationship `json:"relationships"`
	}
	process struct {
		GUID        string  `json:"guid"`
		Type        string  `json:"type"`
		Command     *string `json:"command"`
		Instances   int     `json:"instances"`
		MemoryInMB  int     `json:"memory_in_mb"`
		DiskInMB    int     `json:"disk_in_mb"`
		HealthCheck struct {
			Type string `json:"type"`
			Data struct {
				Timeout  int    `json:"timeout"`
				Endpoint string `json:"endpoint"`
			} `json:"data"`
		} `json:"health_check"`
		Relationships map[string]relationship `json:"relationships"`
	}
	instance struct {
		Type      string  `json:"type"`
		Index     int     `json:"index"`
		State     string  `json:"state"`
		Routable  *bool   `json:"routable"`
		MemQuota  uint64  `json:"mem_quota"`
		DiskQuota uint64  `json:"disk_quota"`
		Details   *string `json:"details"`
		Uptime    int64   `json:"uptime"`
	}
	listOf[T any] struct {
		Resources []T `json:"resources"`
	}
)

// applyManifest posts a manifest as cf push does: raw YAML (cli:api/cloudcontroller/ccv3/job_url.go).
func (u user) applyManifest(ctx context.Context, space, manifest string) response {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, api+"/v3/spaces/"+space+"/actions/apply_manifest", strings.NewReader(manifest))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/x-yaml")
	req.Header.Set("Authorization", u.authorization)
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

func (u user) patch(ctx context.Context, target string, body any) response {
	return request(ctx, http.MethodPatch, target, u.authorization, body)
}

// appByName finds an app as cf push, cf app and cf delete do (cli:actor/v7action/application.go).
func appByName(ctx context.Context, u user, space, name string) []app {
	GinkgoHelper()
	query := url.Values{"names": {name}, "space_guids": {space}}
	return decode[listOf[app]](u.get(ctx, "/v3/apps?"+query.Encode()), http.StatusOK).Resources
}

// pushed applies a manifest of one app and returns the app's GUID, as cf push finds it next.
func pushed(ctx context.Context, u user, space, manifest string) string {
	GinkgoHelper()
	Expect(u.applyManifest(ctx, space, manifest).status).To(Equal(http.StatusAccepted))
	name := strings.TrimSpace(strings.SplitN(strings.SplitN(manifest, "name:", 2)[1], "\n", 2)[0])
	found := appByName(ctx, u, space, name)
	Expect(found).To(HaveLen(1))
	return found[0].GUID
}

// buildpackStore makes a ClusterStack and a ClusterStore with one buildpack, with their status
// as kpack writes it, for the lifecycles that cf-hnc's admission accepts, and deletes them
// after the spec. It returns the stack's name and the buildpack's id.
func buildpackStore(ctx context.Context) (stack, buildpack string) {
	GinkgoHelper()
	stack, buildpack = unique("stack"), unique("example/go")
	clusterStack := &kpackv1alpha2.ClusterStack{ObjectMeta: metav1.ObjectMeta{Name: stack}, Spec: kpackv1alpha2.ClusterStackSpec{Id: "io.buildpacks.stacks.jammy"}}
	store := &kpackv1alpha2.ClusterStore{ObjectMeta: metav1.ObjectMeta{Name: unique("store")}}
	for _, obj := range []client.Object{clusterStack, store} {
		Expect(k8s.Create(ctx, obj)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, obj)).To(Succeed()) })
	}
	store.Status.Buildpacks = []corev1alpha1.BuildpackStatus{{BuildpackInfo: corev1alpha1.BuildpackInfo{Id: buildpack, Version: "1.0.0"}}}
	Expect(k8s.Status().Update(ctx, store)).To(Succeed())
	return stack, buildpack
}

// cfErrorDetail is the detail of the one error of a response with the expected status.
func cfErrorDetail(r response, status int) string {
	GinkgoHelper()
	return cfErrorOf(r, status).Detail
}

var _ = Describe("cf push, cf apps and cf app through the CF API", func() {
	It("creates an app from cf push's manifest, with its lifecycle, and finds it by name; a second push updates the same app", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "app-pusher", "apps")
		stack, buildpack := buildpackStore(ctx)

		// What cf push myapp -p ./src -b BP -s STACK -i 2 -m 256M sends, with keys cf-hnc ignores.
		applied := developer.applyManifest(ctx, space, `---
applications:
- name: myapp
  path: /home/me/src
  default-route: true
  routes:
  - route: myapp.example.com
  stack: `+stack+`
  buildpacks:
  - `+buildpack+`
  instances: 2
  memory: 256M
  env:
    GREETING: hello
  some-future-key: {nested: true}
`)
		Expect(applied.status).To(Equal(http.StatusAccepted), "body: %s", applied.body)
		Expect(applied.header.Get("Location")).To(Equal(api + "/v3/jobs/space.apply_manifest~" + space))
		Expect(applied.header.Values("X-Cf-Warnings")).To(Equal([]string{
			url.QueryEscape(`cf-hnc routes no traffic to apps: application "myapp" gets no route`),
			url.QueryEscape(`cf-hnc ignores the env of application "myapp"`),
		}))
		applyJob := decode[job](developer.get(ctx, applied.header.Get("Location")), http.StatusOK)
		Expect(applyJob.State).To(Equal("COMPLETE"))
		Expect(applyJob.Operation).To(Equal("space.apply_manifest"))

		found := appByName(ctx, developer, space, "MyApp") // names compare ignoring case, as CF's
		Expect(found).To(HaveLen(1))
		created := found[0]
		Expect(created.Name).To(Equal("myapp"))
		Expect(created.State).To(Equal("STOPPED"))
		Expect(created.Lifecycle.Type).To(Equal("buildpack"))
		Expect(created.Lifecycle.Data.Buildpacks).To(Equal([]string{buildpack}))
		Expect(created.Lifecycle.Data.Stack).To(Equal(stack))
		Expect(created.Relationships["space"].Data.GUID).To(Equal(space))
		Expect(created.GUID).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`))
		web := cftest.WebProcess(ctx, k8s, space, created.GUID)
		Expect(web.Spec.Instances).To(BeEquivalentTo(2))
		Expect(web.Spec.MemoryMB).To(BeEquivalentTo(256))
		Expect(web.Spec.DiskMB).To(BeEquivalentTo(1024), "what the manifest does not set keeps CF's default")

		// cf push -b default -i 3 --no-route: the same app, back to the default buildpacks, the
		// stack kept, and no warning: no route is asked for.
		reapplied := developer.applyManifest(ctx, space, "applications:\n- name: myapp\n  no-route: true\n  buildpacks: []\n  processes:\n  - type: web\n    instances: 3\n")
		Expect(reapplied.status).To(Equal(http.StatusAccepted))
		Expect(reapplied.header.Values("X-Cf-Warnings")).To(BeEmpty())
		found = appByName(ctx, developer, space, "myapp")
		Expect(found).To(HaveLen(1))
		Expect(found[0].GUID).To(Equal(created.GUID))
		Expect(found[0].Lifecycle.Data.Buildpacks).To(BeEmpty())
		Expect(found[0].Lifecycle.Data.Stack).To(Equal(stack))
		Expect(cftest.WebProcess(ctx, k8s, space, created.GUID).Spec.Instances).To(BeEquivalentTo(3))

		// cf apps
		pushed(ctx, developer, space, "applications:\n- name: another\n")
		all := decode[listOf[app]](developer.get(ctx, "/v3/apps?space_guids="+space+"&order_by=name&per_page=5000"), http.StatusOK)
		Expect(all.Resources).To(HaveLen(2))
		Expect(all.Resources[0].Name).To(Equal("another"))
		Expect(all.Resources[1].Name).To(Equal("myapp"))
	})

	It("refuses a manifest that it cannot apply with CF's 422 and what is wrong", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "app-pusher", "refused")
		for manifest, detail := range map[string]string{
			"applications: []\n": "it has no applications",
			"applications:\n- name: web\n  docker: {image: nginx}\n":       "runs no docker images",
			"applications:\n- name: web\n  instances: many\n":              "instances",
			"applications:\n- name: web\n  memory: lots\n":                 `size "lots" is not a number`,
			"applications:\n- name: web\n  processes:\n  - type: worker\n": `process type "worker"`,
			"applications:\n- name: web\n  buildpacks: [example/none]\n":   "unknown buildpack",
			"applications:\n- path: .\n":                                   "application 1 has no name",
		} {
			Expect(cfErrorOf(developer.applyManifest(ctx, space, manifest), http.StatusUnprocessableEntity)).
				To(And(HaveField("Title", "CF-UnprocessableEntity"), HaveField("Detail", ContainSubstring(detail))), manifest)
		}
		Expect(appByName(ctx, developer, space, "web")).To(BeEmpty())
	})

	It("lets none but the space's members see or change its apps, and answers the texts the cf CLI matches", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "app-pusher", "private")
		guid := pushed(ctx, developer, space, "applications:\n- name: secret\n")
		web := cftest.WebProcess(ctx, k8s, space, guid)
		stranger := newUser(ctx, "stranger")

		Expect(cfErrorDetail(stranger.applyManifest(ctx, space, "applications:\n- name: mine\n"), http.StatusNotFound)).To(Equal("Space not found"))
		Expect(appByName(ctx, stranger, space, "secret")).To(BeEmpty())
		Expect(cfErrorDetail(stranger.get(ctx, "/v3/apps/"+guid), http.StatusNotFound)).To(Equal("App not found"))
		Expect(cfErrorDetail(stranger.delete(ctx, "/v3/apps/"+guid), http.StatusNotFound)).To(Equal("App not found"))
		Expect(cfErrorDetail(stranger.post(ctx, "/v3/apps/"+guid+"/actions/stop", nil), http.StatusNotFound)).To(Equal("App not found"))
		Expect(cfErrorDetail(stranger.get(ctx, "/v3/processes/"+web.Name), http.StatusNotFound)).To(Equal("Process not found"))
		Expect(cfErrorDetail(stranger.get(ctx, "/v3/processes/"+web.Name+"/stats"), http.StatusNotFound)).To(Equal("Process not found"))
		Expect(decode[listOf[process]](stranger.get(ctx, "/v3/processes?app_guids="+guid), http.StatusOK).Resources).To(BeEmpty())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: guid}, &cfv1alpha1.CFApp{})).To(Succeed())
	})

	It("creates an app with POST /v3/apps (cf create-app) unless the space has one of that name", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "app-creator", "apps")
		body := func(name string) map[string]any {
			return map[string]any{"name": name, "relationships": map[string]any{"space": map[string]any{"data": map[string]any{"guid": space}}}}
		}
		created := decode[app](developer.post(ctx, "/v3/apps", body("created")), http.StatusCreated)
		Expect(created.State).To(Equal("STOPPED"))
		Expect(appByName(ctx, developer, space, "created")).To(ConsistOf(HaveField("GUID", created.GUID)))
		Expect(cfErrorDetail(developer.post(ctx, "/v3/apps", body("Created")), http.StatusUnprocessableEntity)).
			To(Equal("App with the name 'Created' already exists."))
	})
})

var _ = Describe("starting, stopping and restaging an app through the CF API", func() {
	It("starts an app only with a current droplet, which must be a droplet of the app that staged", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "app-starter", "apps")
		guid := pushed(ctx, developer, space, "applications:\n- name: starter\n")
		other := pushed(ctx, developer, space, "applications:\n- name: other\n")

		Expect(cfErrorDetail(developer.post(ctx, "/v3/apps/"+guid+"/actions/start", nil), http.StatusUnprocessableEntity)).
			To(Equal("Assign a droplet before starting this app."))
		Expect(cfErrorDetail(developer.post(ctx, "/v3/apps/"+guid+"/actions/restart", nil), http.StatusUnprocessableEntity)).
			To(Equal("Assign a droplet before starting this app."))
		Expect(cfErrorDetail(developer.get(ctx, "/v3/apps/"+guid+"/relationships/current_droplet"), http.StatusNotFound)).To(Equal("Droplet not found"))

		assign := func(droplet string) response {
			return developer.patch(ctx, "/v3/apps/"+guid+"/relationships/current_droplet", map[string]any{"data": map[string]any{"guid": droplet}})
		}
		Expect(cfErrorDetail(assign("no-such-droplet"), http.StatusUnprocessableEntity)).To(HavePrefix("Unable to assign current droplet."))
		Expect(cfErrorDetail(assign(cftest.StagedDroplet(ctx, k8s, space, other)), http.StatusUnprocessableEntity)).To(ContainSubstring("belongs to another app"))

		droplet := cftest.StagedDroplet(ctx, k8s, space, guid)
		assigned := decode[relationship](assign(droplet), http.StatusOK)
		Expect(assigned.Data.GUID).To(Equal(droplet))
		Expect(decode[relationship](developer.get(ctx, "/v3/apps/"+guid+"/relationships/current_droplet"), http.StatusOK).Data.GUID).To(Equal(droplet))

		Expect(decode[app](developer.post(ctx, "/v3/apps/"+guid+"/actions/restart", nil), http.StatusOK).State).To(Equal("STARTED"))
		started := &cfv1alpha1.CFApp{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: guid}, started)).To(Succeed())
		Expect(started.Spec.DesiredState).To(Equal(cfv1alpha1.StartedState))
		Expect(started.Spec.CurrentDropletRef.Name).To(Equal(droplet))

		// PollStart: the web process's instance is listed, though no node runs it, and not RUNNING.
		processes := decode[listOf[process]](developer.get(ctx, "/v3/apps/"+guid+"/processes"), http.StatusOK).Resources
		Expect(processes).To(ConsistOf(And(HaveField("Type", "web"), HaveField("Instances", 1))))
		stats := decode[listOf[instance]](developer.get(ctx, "/v3/processes/"+processes[0].GUID+"/stats"), http.StatusOK).Resources
		Expect(stats).To(ConsistOf(And(HaveField("Index", 0), HaveField("State", BeElementOf("DOWN", "STARTING")))))

		Expect(decode[app](developer.post(ctx, "/v3/apps/"+guid+"/actions/stop", nil), http.StatusOK).State).To(Equal("STOPPED"))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: guid}, started)).To(Succeed())
		Expect(started.Spec.DesiredState).To(Equal(cfv1alpha1.StoppedState))
	})

	It("restarts the instances that run an app's current droplet on a restart, and on a start that follows a stop", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "app-restarter", "apps")
		guid := pushed(ctx, developer, space, "applications:\n- name: restarted\n")
		droplet := cftest.StagedDroplet(ctx, k8s, space, guid)
		setDroplet(ctx, developer, guid, droplet)
		Expect(developer.post(ctx, "/v3/apps/"+guid+"/actions/start", nil).status).To(Equal(http.StatusOK))
		web := cftest.WebProcess(ctx, k8s, space, guid)
		Eventually(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
			return web.Status.Droplet
		}).Should(Equal(droplet), "cf-hnc gives the instances the current droplet")
		started := web.Annotations[cfv1alpha1.AppStartedAtAnnotation]

		Expect(developer.post(ctx, "/v3/apps/"+guid+"/actions/restart", nil).status).To(Equal(http.StatusOK))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		Expect(web.Annotations).To(HaveKeyWithValue(cfv1alpha1.AppStartedAtAnnotation, Not(Equal(started))))
		started = web.Annotations[cfv1alpha1.AppStartedAtAnnotation]

		// cf restart: stop, then start at once, which cf-hnc may see as one unchanged state.
		Expect(developer.post(ctx, "/v3/apps/"+guid+"/actions/stop", nil).status).To(Equal(http.StatusOK))
		Expect(developer.post(ctx, "/v3/apps/"+guid+"/actions/start", nil).status).To(Equal(http.StatusOK))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		Expect(web.Annotations).To(HaveKeyWithValue(cfv1alpha1.AppStartedAtAnnotation, Not(Equal(started))))

		// cf start of a started app changes nothing.
		started = web.Annotations[cfv1alpha1.AppStartedAtAnnotation]
		Expect(developer.post(ctx, "/v3/apps/"+guid+"/actions/start", nil).status).To(Equal(http.StatusOK))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		Expect(web.Annotations).To(HaveKeyWithValue(cfv1alpha1.AppStartedAtAnnotation, started))
	})
})

var _ = Describe("an app's processes and their instances through the CF API", func() {
	It("presents the instances as cf-hnc's status reports them, and never claims one RUNNING that is not", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "process-reader", "apps")
		// A process of no app, so that no reconciler rewrites the status that the spec writes.
		p := &cfv1alpha1.CFProcess{
			ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFProcessSpec{
				AppRef: corev1.LocalObjectReference{Name: string(uuid.NewUUID())}, ProcessType: "web", Command: "./serve --port $PORT",
				Instances: 3, MemoryMB: 256, DiskMB: 512,
				HealthCheck: cfv1alpha1.HealthCheck{Type: cfv1alpha1.HTTPHealthCheck, Endpoint: "/healthz", TimeoutSeconds: 30},
			},
		}
		Expect(k8s.Create(ctx, p)).To(Succeed())
		const droplet = "droplet-guid"
		p.Status = cfv1alpha1.CFProcessStatus{Droplet: droplet, DesiredInstances: 3, RunningInstances: 1, CrashedInstances: 1, Instances: []cfv1alpha1.InstanceStatus{
			{Index: 1, State: cfv1alpha1.InstanceCrashed, Reason: "CrashLoopBackOff", Restarts: 4, Droplet: droplet},
			{Index: 0, State: cfv1alpha1.InstanceRunning, Droplet: droplet},
			{Index: 2, State: cfv1alpha1.InstanceStarting, Reason: "ContainerCreating", Droplet: droplet},
		}}
		Expect(k8s.Status().Update(ctx, p)).To(Succeed())

		stats := decode[listOf[instance]](developer.get(ctx, "/v3/processes/"+p.Name+"/stats"), http.StatusOK).Resources
		Expect(stats).To(HaveLen(3))
		for i, want := range []struct {
			state    string
			routable bool
			details  *string
		}{{"RUNNING", true, nil}, {"CRASHED", false, ptr.To("CrashLoopBackOff")}, {"STARTING", false, ptr.To("ContainerCreating")}} {
			Expect(stats[i].Index).To(Equal(i))
			Expect(stats[i].Type).To(Equal("web"))
			Expect(stats[i].State).To(Equal(want.state))
			Expect(stats[i].Routable).To(HaveValue(Equal(want.routable)))
			Expect(stats[i].Details).To(Equal(want.details))
			Expect(stats[i].MemQuota).To(BeEquivalentTo(256 << 20))
			Expect(stats[i].DiskQuota).To(BeEquivalentTo(512 << 20))
		}

		got := decode[process](developer.get(ctx, "/v3/processes/"+p.Name), http.StatusOK)
		Expect(got.Type).To(Equal("web"))
		Expect(got.Command).To(HaveValue(Equal("./serve --port $PORT")))
		Expect(got.Instances).To(Equal(3))
		Expect(got.MemoryInMB).To(Equal(256))
		Expect(got.DiskInMB).To(Equal(512))
		Expect(got.HealthCheck.Type).To(Equal("http"))
		Expect(got.HealthCheck.Data.Endpoint).To(Equal("/healthz"))
		Expect(got.HealthCheck.Data.Timeout).To(Equal(30))
		Expect(got.Relationships["app"].Data.GUID).To(Equal(p.Spec.AppRef.Name))
		Expect(decode[listOf[process]](developer.get(ctx, "/v3/processes?space_guids="+space+"&app_guids="+p.Spec.AppRef.Name), http.StatusOK).Resources).
			To(ConsistOf(HaveField("GUID", p.Name)))
	})

	It("lists each instance of a process as DOWN while its app has no droplet or is stopped, as Cloud Controller does", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "stats-reader", "stopped")
		guid := pushed(ctx, developer, space, "applications:\n- name: idle\n  instances: 2\n")
		web := cftest.WebProcess(ctx, k8s, space, guid)
		stats := func() []map[string]any {
			return decode[listOf[map[string]any]](developer.get(ctx, "/v3/processes/"+web.Name+"/stats"), http.StatusOK).Resources
		}
		// An instance that runs nowhere, as Cloud Controller presents it: no host, quotas or usage,
		// and routable null (cloud_controller_ng:app/presenters/v3/process_stats_presenter.rb).
		down := func(index int) map[string]any {
			return map[string]any{"type": "web", "index": float64(index), "state": "DOWN", "routable": nil, "uptime": float64(0),
				"isolation_segment": nil, "details": nil}
		}
		Expect(stats()).To(Equal([]map[string]any{down(0), down(1)}), "no droplet: cf app shows web:0/2")

		droplet := cftest.StagedDroplet(ctx, k8s, space, guid)
		setDroplet(ctx, developer, guid, droplet)
		Expect(stats()).To(Equal([]map[string]any{down(0), down(1)}), "stopped")

		Expect(developer.post(ctx, "/v3/apps/"+guid+"/processes/web/actions/scale", map[string]any{"instances": 3}).status).To(Equal(http.StatusAccepted))
		Expect(stats()).To(Equal([]map[string]any{down(0), down(1), down(2)}), "cf scale -i 3 of the stopped app")
	})

	It("answers every request of the cf CLI's app summary for a pushed app", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "summary-reader", "apps")
		guid := pushed(ctx, developer, space, "applications:\n- name: summarized\n")
		web := cftest.WebProcess(ctx, k8s, space, guid)

		processes := decode[listOf[process]](developer.get(ctx, "/v3/apps/"+guid+"/processes"), http.StatusOK).Resources
		Expect(processes).To(ConsistOf(And(HaveField("GUID", web.Name), HaveField("Type", "web"), HaveField("Instances", 1),
			HaveField("MemoryInMB", 1024), HaveField("Command", BeNil()))))
		Expect(processes[0].Relationships["app"].Data.GUID).To(Equal(guid))
		Expect(decode[listOf[process]](developer.get(ctx, "/v3/processes?app_guids="+guid), http.StatusOK).Resources).To(HaveLen(1))
		Expect(decode[listOf[instance]](developer.get(ctx, "/v3/processes/"+web.Name+"/stats"), http.StatusOK).Resources).
			To(ConsistOf(HaveField("State", "DOWN")), "a stopped app's instance is DOWN: cf app shows web:0/1")
		for _, empty := range []string{
			"/v3/processes/" + web.Name + "/sidecars",
			"/v3/apps/" + guid + "/routes",
			"/v3/routes?app_guids=" + guid,
			"/v3/deployments?app_guids=" + guid + "&status_values=ACTIVE&order_by=-created_at&per_page=1&page=1",
		} {
			Expect(decode[list](developer.get(ctx, empty), http.StatusOK).Resources).To(BeEmpty(), empty)
		}
		Expect(decode[listOf[map[string]any]](developer.post(ctx, "/v3/resource_matches",
			map[string]any{"resources": []map[string]any{{"path": "main.go", "mode": "644", "checksum": map[string]any{"value": "abc"}, "size_in_bytes": 3}}}),
			http.StatusOK).Resources).To(BeEmpty())
		Expect(string(developer.post(ctx, "/v3/spaces/"+space+"/manifest_diff", nil).body)).To(MatchJSON(`{"diff":[]}`))

		// cf push --strategy rolling: CF's error that says why, not "API endpoint not found".
		Expect(cfErrorOf(developer.post(ctx, "/v3/deployments", map[string]any{
			"strategy": "rolling", "relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": guid}}},
		}), http.StatusUnprocessableEntity)).To(And(HaveField("Title", "CF-UnprocessableEntity"), HaveField("Detail", ContainSubstring("without --strategy"))))
	})
})

var _ = Describe("cf delete through the CF API", func() {
	It("deletes an app as the cf CLI does, and its job completes once the app and its processes are gone", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "app-deleter", "apps")
		guid := pushed(ctx, developer, space, "applications:\n- name: doomed\n")
		web := cftest.WebProcess(ctx, k8s, space, guid)

		deleted := developer.delete(ctx, "/v3/apps/"+guid)
		Expect(deleted.status).To(Equal(http.StatusAccepted))
		location := deleted.header.Get("Location")
		Expect(location).To(Equal(api + "/v3/jobs/app.delete~" + guid))
		Expect(awaitJob(ctx, developer, location).Operation).To(Equal("app.delete"))

		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: guid}, &cfv1alpha1.CFApp{})).To(Satisfy(apierrors.IsNotFound))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), &cfv1alpha1.CFProcess{})).To(Satisfy(apierrors.IsNotFound),
			"the app goes after its processes")
		Expect(appByName(ctx, developer, space, "doomed")).To(BeEmpty())
		Expect(cfErrorDetail(developer.get(ctx, "/v3/apps/"+guid), http.StatusNotFound)).To(Equal("App not found"))
	})
})
