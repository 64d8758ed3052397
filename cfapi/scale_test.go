package cfapi_test

import (
	"encoding/json"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/cftest"
)

var _ = Describe("cf scale through the CF API", func() {
	It("scales a started app's process as cf scale -i 2 -m 512M -k 2G -f does, then restarts it and finds its instances", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "app-scaler", "apps")
		guid := pushed(ctx, developer, space, "applications:\n- name: scaled\n")
		droplet := cftest.StagedDroplet(ctx, k8s, space, guid)
		setDroplet(ctx, developer, guid, droplet)
		Expect(developer.post(ctx, "/v3/apps/"+guid+"/actions/start", nil).status).To(Equal(http.StatusOK))
		web := cftest.WebProcess(ctx, k8s, space, guid)

		// cli:command/v7/scale_command.go: the app by name, the scale of its web process with the
		// flags given, then stop and start (new limits), PollStart and the app's summary.
		Expect(appByName(ctx, developer, space, "scaled")).To(ConsistOf(HaveField("GUID", guid)))
		scaled := developer.post(ctx, "/v3/apps/"+guid+"/processes/web/actions/scale",
			map[string]any{"instances": 2, "memory_in_mb": 512, "disk_in_mb": 2048})
		Expect(decode[process](scaled, http.StatusAccepted)).To(And(HaveField("GUID", web.Name), HaveField("Type", "web"),
			HaveField("Instances", 2), HaveField("MemoryInMB", 512), HaveField("DiskInMB", 2048)))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		Expect(web.Spec).To(And(HaveField("Instances", BeEquivalentTo(2)), HaveField("MemoryMB", BeEquivalentTo(512)), HaveField("DiskMB", BeEquivalentTo(2048))))

		Expect(developer.post(ctx, "/v3/apps/"+guid+"/actions/stop", nil).status).To(Equal(http.StatusOK))
		Expect(developer.post(ctx, "/v3/apps/"+guid+"/actions/start", nil).status).To(Equal(http.StatusOK))
		processes := decode[listOf[process]](developer.get(ctx, "/v3/apps/"+guid+"/processes"), http.StatusOK).Resources
		Expect(processes).To(ConsistOf(HaveField("Instances", 2)))
		Expect(decode[listOf[instance]](developer.get(ctx, "/v3/processes/"+web.Name+"/stats"), http.StatusOK).Resources).
			To(HaveExactElements(HaveField("Index", 0), HaveField("Index", 1)), "both instances are listed while they start")

		By("cf scale -i 1 of the started app: only the instances change, and the app is not restarted")
		Expect(decode[process](developer.post(ctx, "/v3/apps/"+guid+"/processes/web/actions/scale", map[string]any{"instances": 1}), http.StatusAccepted)).
			To(And(HaveField("Instances", 1), HaveField("MemoryInMB", 512)))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		Expect(web.Spec.Instances).To(BeEquivalentTo(1))
		Expect(web.Spec.MemoryMB).To(BeEquivalentTo(512))
	})

	It("refuses what Cloud Controller refuses, in its words, and what cf-hnc cannot do, and changes nothing", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "app-scaler", "refused")
		guid := pushed(ctx, developer, space, "applications:\n- name: fixed\n  instances: 3\n  memory: 256M\n")
		web := cftest.WebProcess(ctx, k8s, space, guid)
		before := web.Spec
		scale := "/v3/apps/" + guid + "/processes/web/actions/scale"

		for body, detail := range map[string]string{
			`{"instances": -1}`:                              "Instances must be greater than or equal to 0",
			`{"instances": -1, "disk_in_mb": 0}`:             "Instances must be greater than or equal to 0, Disk in mb must be greater than 0",
			`{"instances": 2, "memory_in_mb": 0}`:            "Memory in mb must be greater than 0",
			`{"instances": 4294967298}`:                      "Instances must be less than or equal to 2147483647",
			`{"log_rate_limit_in_bytes_per_second": -2}`:     "Log rate limit in bytes per second must be greater than or equal to -1",
			`{"log_rate_limit_in_bytes_per_second": 1024}`:   "cf-hnc does not limit the log rate of processes: only -1 (unlimited) is accepted",
			`{"instances": 2, "memory_in_mb": 8}`:            "greater than or equal to 16", // a CFProcess's least memory
			`{"instances": 101}`:                             "less than or equal to 100",   // a CFProcess's most instances
			`{"disk_in_mb": 1024, "memory_in_mb": 70000000}`: "less than or equal to 65536",
		} {
			Expect(cfErrorOf(developer.post(ctx, scale, json.RawMessage(body)), http.StatusUnprocessableEntity)).
				To(And(HaveField("Code", 10008), HaveField("Title", "CF-UnprocessableEntity"), HaveField("Detail", ContainSubstring(detail))), body)
		}
		Expect(cfErrorOf(developer.post(ctx, scale, json.RawMessage(`{"instances": "two"}`)), http.StatusBadRequest)).To(HaveField("Title", "CF-MessageParseError"))

		By("a process type the app does not have, and an app the user does not see: CF's texts, which cf scale matches")
		Expect(cfErrorDetail(developer.post(ctx, "/v3/apps/"+guid+"/processes/worker/actions/scale", map[string]any{"instances": 1}), http.StatusNotFound)).
			To(Equal("Process not found"))
		stranger := newUser(ctx, "stranger")
		Expect(cfErrorDetail(stranger.post(ctx, scale, map[string]any{"instances": 1}), http.StatusNotFound)).To(Equal("App not found"))
		Expect(cfErrorDetail(stranger.post(ctx, "/v3/processes/"+web.Name+"/actions/scale", map[string]any{"instances": 1}), http.StatusNotFound)).
			To(Equal("Process not found"))

		By("a space auditor sees the process, and RBAC refuses the write")
		auditor := newUser(ctx, "auditor")
		bind(ctx, space, "cf-space-auditor", auditor.Subject())
		Eventually(func() int { return auditor.get(ctx, "/v3/processes/"+web.Name).status }).Should(Equal(http.StatusOK))
		Expect(cfErrorOf(auditor.post(ctx, scale, map[string]any{"instances": 1}), http.StatusForbidden)).
			To(And(HaveField("Title", "CF-NotAuthorized"), HaveField("Detail", ContainSubstring("cannot patch resource \"cfprocesses\""))))

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		Expect(web.Spec).To(Equal(before))
	})
})

var _ = Describe("the links of a process", func() {
	It("serves every link that a process advertises, its scale action among them", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "link-follower", "apps")
		guid := pushed(ctx, developer, space, "applications:\n- name: linked\n")
		web := cftest.WebProcess(ctx, k8s, space, guid)

		links := decode[struct {
			Links map[string]struct {
				Href   string `json:"href"`
				Method string `json:"method"`
			} `json:"links"`
		}](developer.get(ctx, "/v3/processes/"+web.Name), http.StatusOK).Links
		Expect(links).To(HaveKey("scale"))
		for name, l := range links {
			method := l.Method
			var body any
			if method == "" {
				method = http.MethodGet
			} else {
				body = map[string]any{}
			}
			followed := request(ctx, method, l.Href, developer.authorization, body)
			Expect(followed.status).To(BeNumerically("<", 300), "%s: %s %s: %s", name, method, l.Href, followed.body)
		}
	})
})
