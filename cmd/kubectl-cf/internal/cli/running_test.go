package cli_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
)

// Running apps as far as this suite can: it has no node (no instance ever runs, and pods/log
// of an unscheduled pod is empty) and no kpack (droplets are CFBuilds whose status a spec
// writes). The specs check what the commands write; the e2e suite runs the instances.
var _ = Describe("running apps: scale, app, start, stop, restart and logs", func() {
	var org, space string
	var web *cfv1alpha1.CFApp

	BeforeEach(func(ctx SpecContext) {
		org = unique("acme")
		createOrg(ctx, org)
		space = createSpace(ctx, org, "dev")
		web = cftest.CreateApp(ctx, k8s, space, "Web", cfv1alpha1.StoppedState)
	})

	// run runs the plugin on the app in the space "dev" of the org, and expects it to succeed.
	run := func(ctx context.Context, command string, args ...string) string {
		GinkgoHelper()
		out, err := kubectlCF(ctx, append([]string{command, "web", "-o", org, "-s", "dev"}, args...)...)
		Expect(err).NotTo(HaveOccurred())
		return out
	}

	It("scales the web process, making it as cf-hnc does when cf-hnc has not yet, and shows its scale", func(ctx SpecContext) {
		Expect(run(ctx, "scale", "-i", "2", "-m", "256M", "-k", "2G")).To(Equal(`Scaled process web of app "Web": 2 instances, 256M memory, 2G disk.` + "\n"))
		p := webProcess(ctx, web)
		Expect(p.Labels).To(And(HaveKeyWithValue(cfv1alpha1.AppLabel, web.Name), HaveKeyWithValue(cfv1alpha1.ProcessTypeLabel, "web")))
		Expect(p.OwnerReferences).To(ContainElement(And(HaveField("Kind", "CFApp"), HaveField("Name", web.Name), HaveField("UID", web.UID),
			HaveField("Controller", HaveValue(BeTrue())))))
		Expect(p.Spec).To(Equal(cfv1alpha1.CFProcessSpec{AppRef: corev1.LocalObjectReference{Name: web.Name}, ProcessType: "web",
			Instances: 2, MemoryMB: 256, DiskMB: 2048, HealthCheck: cfv1alpha1.HealthCheck{Type: "port", TimeoutSeconds: 60}}))

		Expect(run(ctx, "scale")).To(Equal(`Process web of app "Web": 2 instances, 256M memory, 2G disk` + "\n"))
		Expect(run(ctx, "scale", "-i", "2", "-m", "256MB")).To(Equal(`Process web of app "Web" has 2 instances, 256M memory, 2G disk already.` + "\n"))
		Expect(run(ctx, "scale", "-i", "0")).To(Equal(`Scaled process web of app "Web": 0 instances, 256M memory, 2G disk.` + "\n"))
		Expect(webProcess(ctx, web).Spec.Instances).To(BeZero())
	})

	DescribeTable("refuses to scale with bad input and changes nothing",
		func(ctx SpecContext, args []string, message string) {
			run(ctx, "scale", "-i", "3")
			before := webProcess(ctx, web)
			out, err := kubectlCF(ctx, append([]string{"scale", "web", "-o", org, "-s", "dev"}, args...)...)
			Expect(err).To(MatchError(message))
			Expect(out).To(BeEmpty())
			Expect(webProcess(ctx, web).Spec).To(Equal(before.Spec))
		},
		Entry("too many instances", []string{"-i", "101", "-m", "512M"}, "-i 101: a process has 0 to 100 instances"),
		Entry("a size without a unit", []string{"-m", "512"}, `-m "512": give a whole number with a unit, M or G (MB and GB do too), as in 256M or 1G`),
		Entry("a size too large", []string{"-i", "1", "-k", "128G"}, "-k 128G: give 16M to 64G"),
		Entry("a process the app does not have", []string{"--process", "worker", "-i", "1"},
			`app "Web" has no worker process (cf-hnc makes the web process of every app)`),
	)

	It("lists each app's instances per process, and shows an app with its processes", func(ctx SpecContext) {
		worker := cftest.CreateApp(ctx, k8s, space, "worker", cfv1alpha1.StoppedState)
		run(ctx, "scale", "-i", "3", "-m", "512M")
		_, err := kubectlCF(ctx, "scale", "worker", "-o", org, "-s", "dev", "-i", "0")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { return dropletStatus(ctx, web) }).Should(Equal(cfv1alpha1.NoDropletReason))
		Eventually(func() string { return dropletStatus(ctx, worker) }).Should(Equal(cfv1alpha1.NoDropletReason))

		out, err := kubectlCF(ctx, "apps", "--org", org, "-s", "dev")
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)).To(Equal([]string{
			"NAME GUID STATE INSTANCES DROPLET DROPLET STATUS HELD DROPLET",
			"Web " + web.Name + " STOPPED web:0/3 - NoDroplet",
			"worker " + worker.Name + " STOPPED web:0/0 - NoDroplet",
		}))

		out, err = kubectlCF(ctx, "app", "WEB", "--org", org, "-s", "dev")
		Expect(err).NotTo(HaveOccurred())
		Expect(lines(out)).To(HaveExactElements(
			"name: Web", "guid: "+web.Name, "state: STOPPED", "droplet: -", "stack: -", HavePrefix("droplet status: NoDroplet"), "",
			"type: web", "instances: 0/3", "memory: 512M", "disk: 1G", "health check: port, 60s to start", HavePrefix("running: ")))

		out, err = kubectlCF(ctx, "app", "web", "-n", space, "-o", "yaml")
		Expect(err).NotTo(HaveOccurred())
		list := &unstructured.UnstructuredList{}
		Expect(yaml.Unmarshal([]byte(out), &list.Object)).To(Succeed())
		Expect(list.Object).To(HaveKeyWithValue("kind", "List"))
		Expect(list.Object["items"]).To(HaveExactElements(
			And(HaveKeyWithValue("kind", "CFApp"), HaveKeyWithValue("metadata", HaveKeyWithValue("name", web.Name))),
			And(HaveKeyWithValue("kind", "CFProcess"), HaveKeyWithValue("spec", HaveKeyWithValue("memoryMB", BeNumerically("==", 512))))))

		out, err = kubectlCF(ctx, "app", "web", "-n", space, "-o", "name")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(fmt.Sprintf("cfapp.workloads.cloudfoundry.org/%s\ncfprocess.workloads.cloudfoundry.org/%s\n",
			web.Name, cfv1alpha1.ProcessName(web.Name, "web"))))
	})

	It("starts only an app with a droplet, waits for it to run, and stops it", func(ctx SpecContext) {
		_, err := kubectlCF(ctx, "start", "web", "-o", org, "-s", "dev")
		Expect(err).To(MatchError(`app "Web" has no droplet: it must be staged first (kubectl cf push, or kubectl cf restage)`))
		Expect(desiredState(ctx, web)).To(Equal(cfv1alpha1.StoppedState))

		droplet := stagedDroplet(ctx, web)
		out, err := kubectlCF(ctx, "start", "web", "-o", org, "-s", "dev", "--wait-timeout", "2s")
		Expect(err).To(MatchError(MatchRegexp(`^app "Web" is not running after 2s: .+; see what its instances wrote: kubectl cf logs Web --recent -o %s -s dev$`, org)))
		Expect(len(lines(out))).To(BeNumerically(">", 2))
		Expect(lines(out)[:2]).To(Equal([]string{"Starting app \"Web\" with droplet " + droplet.Name, `Waiting for app "Web" to run (at most 2s):`}))
		Expect(lines(out)[2:]).To(HaveEach(MatchRegexp(`^\d+s STARTING \w+: `)), "nothing runs without a node")
		Expect(desiredState(ctx, web)).To(Equal(cfv1alpha1.StartedState), "a start that times out leaves the app started")
		Expect(run(ctx, "start")).To(Equal(`App "Web" is STARTED already.` + "\n"))

		Expect(run(ctx, "stop")).To(Equal(`App "Web" is STOPPED: its instances stop.` + "\n"))
		Expect(desiredState(ctx, web)).To(Equal(cfv1alpha1.StoppedState))
		Expect(web.Spec.CurrentDropletRef.Name).To(Equal(droplet.Name), "a stopped app keeps its droplet")
		Expect(run(ctx, "stop")).To(Equal(`App "Web" is STOPPED already.` + "\n"))
	})

	It("restarts an app's processes by annotating them, and starts a stopped one", func(ctx SpecContext) {
		_, err := kubectlCF(ctx, "restart", "web", "-o", org, "-s", "dev")
		Expect(err).To(MatchError(`app "Web" has no droplet: it must be staged first (kubectl cf push, or kubectl cf restage)`))
		droplet := stagedDroplet(ctx, web)
		run(ctx, "scale", "-i", "1")

		before := time.Now().Add(-time.Second)
		out, err := kubectlCF(ctx, "restart", "web", "-o", org, "-s", "dev", "--wait-timeout", "1s")
		Expect(err).To(MatchError(ContainSubstring(`app "Web" is not running after 1s: `)))
		Expect(out).To(HavePrefix(`App "Web" was STOPPED: starting it with droplet %s`+"\n", droplet.Name))
		Expect(desiredState(ctx, web)).To(Equal(cfv1alpha1.StartedState))
		first := restartedAt(ctx, web)
		Expect(first).To(BeTemporally(">", before))

		out, _ = kubectlCF(ctx, "restart", "web", "-o", org, "-s", "dev", "--wait-timeout", "1s")
		Expect(out).To(HavePrefix(`Restarting app "Web": the instances of web are replaced one at a time.` + "\n"))
		Expect(restartedAt(ctx, web)).To(BeTemporally(">", first))
	})

	It("shows an app's instances' logs, and says when there are none or they wrote nothing", func(ctx SpecContext) {
		Expect(run(ctx, "logs", "--recent")).To(Equal(`App "Web" has no instances: it is STOPPED.` + "\n"))

		// Pods of instances of a process that cf-hnc does not run, so that no StatefulSet
		// adopts them; a build pod of the app, and an instance of another app.
		worker := cfv1alpha1.ProcessName(web.Name, "worker")
		instancePod(ctx, space, web.Name, worker, "worker", "0")
		instancePod(ctx, space, web.Name, worker, "worker", "1")
		instancePod(ctx, space, web.Name, "", "", "")
		other := cftest.CreateApp(ctx, k8s, space, "other", cfv1alpha1.StoppedState)
		instancePod(ctx, space, other.Name, cfv1alpha1.ProcessName(other.Name, "web"), "web", "0")

		Expect(run(ctx, "logs", "--recent")).To(Equal(`The 2 instances of app "Web" have written nothing yet.` + "\n"))

		following, stop := context.WithTimeout(ctx, 3*time.Second)
		defer stop()
		Expect(run(following, "logs")).To(Equal(`Following what the instances of app "Web" write (Ctrl-C ends it):` + "\n"))
	})
})

// webProcess reads the app's web process.
func webProcess(ctx SpecContext, app *cfv1alpha1.CFApp) *cfv1alpha1.CFProcess {
	GinkgoHelper()
	p := &cfv1alpha1.CFProcess{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: cfv1alpha1.ProcessName(app.Name, "web")}, p)).To(Succeed())
	return p
}

// restartedAt is the time of the last restart asked of the app's web process.
func restartedAt(ctx SpecContext, app *cfv1alpha1.CFApp) time.Time {
	GinkgoHelper()
	at, err := time.Parse(time.RFC3339, webProcess(ctx, app).Annotations[cfv1alpha1.RestartedAtAnnotation])
	Expect(err).NotTo(HaveOccurred())
	return at
}

func desiredState(ctx SpecContext, app *cfv1alpha1.CFApp) cfv1alpha1.DesiredState {
	GinkgoHelper()
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
	return app.Spec.DesiredState
}

// stagedDroplet makes the app's current droplet a build that staged, as cf-hnc leaves it: this
// suite runs no kpack.
func stagedDroplet(ctx SpecContext, app *cfv1alpha1.CFApp) *cfv1alpha1.CFBuild {
	GinkgoHelper()
	build := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: cftest.StagedDroplet(ctx, k8s, app.Namespace, app.Name)}}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(build), build)).To(Succeed())
	mutate(ctx, app, func() { app.Spec.CurrentDropletRef.Name = build.Name })
	return build
}

// instancePod creates a pod labelled as an instance of an app's process (without a process:
// as a build pod of the app), which never runs here.
func instancePod(ctx SpecContext, space, app, process, processType, index string) {
	GinkgoHelper()
	labels := map[string]string{cfv1alpha1.AppLabel: app}
	if process != "" {
		labels[cfv1alpha1.ProcessLabel] = process
		labels[cfv1alpha1.ProcessTypeLabel] = processType
		labels["apps.kubernetes.io/pod-index"] = index
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, GenerateName: "instance-", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.local/app"}},
			AutomountServiceAccountToken: ptr.To(false)},
	}
	// The namespace's default ServiceAccount, which a pod needs, may not be made yet.
	Eventually(func() error { return k8s.Create(ctx, pod.DeepCopy()) }).Should(Succeed())
}
