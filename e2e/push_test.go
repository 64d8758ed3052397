package e2e_test

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/dockerconfig"
	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
)

// The developer's flow through the built plugin: push, apps, builds, restage, against kpack,
// the node and the registry.
var _ = Describe("The quick start (docs/quickstart.md) through the kubectl-cf binary", func() {
	It("goes from create-org to a pushed app running a droplet, and a stack fix redeploys it", func(ctx SpecContext) {
		org := "quick-" + string(uuid.NewUUID())[:8]
		host := cp.Kpack().Registry.Host()

		out := cf("create-org", org)
		Expect(out).To(MatchRegexp(`^org %q is ready: namespace [0-9a-f-]{36}\n$`, org))
		orgGUID := guidOf(out)
		Expect(cf("create-space", org, "dev")).To(ContainSubstring(`space "dev" in org %q is ready`, org))
		Expect(cfWithStdin(cp.Kpack().TenantPassword+"\n", "set-registry", org, "--server", host, "--username", "orgs/"+org,
			"--password-stdin", "--droplet-repository", host+"/orgs/"+org)).To(MatchRegexp(`(?m)^%s\s+dev\s+[0-9a-f-]{36}\s+True$`, org))
		Expect(cf("tree")).To(MatchRegexp(`(?m)^%s\s+[0-9a-f-]{36}\s+True\n└── dev\s+[0-9a-f-]{36}\s+True\s+True$`, org))

		dir := appSource(".cfignore", "*.log\n", "debug.log", "noise\n")
		out = cf("push", "web", "-o", org, "-s", "dev", "-p", dir)
		Expect(out).To(ContainSubstring("Packed %s: 2 files, 17 B; 2 left out by .cfignore and the default exclusions\n", dir))
		Expect(out).To(MatchRegexp(`(?m)^Created app "web": [0-9a-f-]{36}$`))
		Expect(out).To(MatchRegexp(`(?m)^\s+\d+s\s+STAGED\s+BuildSucceeded: droplet %s/orgs/%s/[0-9a-f-]{36}/[0-9a-f-]{36}@sha256:[0-9a-f]{64}$`,
			regexp.QuoteMeta(host), org))
		Expect(out).To(MatchRegexp(`(?m)^App "web" is STARTED with droplet ([0-9a-f-]{36}):$`))
		Expect(out).To(MatchRegexp(`(?m)^  stack:\s+%s$`, cp.Kpack().Images.Stack.ID))
		Expect(out).To(MatchRegexp(`(?m)^  run image:\s+\S+@sha256:[0-9a-f]{64}$`))
		Expect(out).To(MatchRegexp(`(?m)^  buildpacks:\s+cf-hnc/staticfile \d+\.\d+\.\d+$`))
		Expect(out).To(MatchRegexp(`(?m)^  processes:\s+web: staticfile-server -root \.$`))
		Expect(out).To(MatchRegexp(`(?m)^Waiting for app "web" to run \(at most 5m0s\):$`))
		Expect(out).To(MatchRegexp(`(?m)^\s+\d+s\s+RUNNING\s+InstancesRunning: web 1/1 running$`))

		app := appNamed(ctx, org, "web")
		Expect(app.Spec.DesiredState).To(Equal(cfv1alpha1.StartedState))
		droplet := app.Spec.CurrentDropletRef.Name
		Expect(packagedFiles(ctx, app, org)).To(ConsistOf("Staticfile", "index.html"))
		Eventually(func() string { return cf("apps", "--org", org, "-s", "dev") }).Should(MatchRegexp(
			`(?m)^web\s+%s\s+STARTED\s+web:1/1\s+%s\s+UpToDate$`, app.Name, droplet))
		Expect(cf("logs", "web", "-o", org, "-s", "dev", "--recent")).To(MatchRegexp(
			`(?m)^\d{4}-\d\d-\d\dT\S+ \[APP/PROC/WEB/0\] staticfile-server: serving \. on \S+:8080$`), "what the instance wrote")

		By("the operator's stack fix: kpack rebases the droplet and cf-hnc moves the app to it")
		runImage, err := cp.UpgradeRunImage(ctx)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { return cf("builds", "web", "--org", org, "-s", "dev") }, 2*time.Minute).Should(MatchRegexp(
			`(?m)^%s-build-2\s+\S+\s+STAGED\s+BuildSucceeded\s+%s\s+STACK\s+sha256:[0-9a-f]{12}\s+current$`, app.Name, droplet))
		Expect(cf("apps", "--org", org, "-s", "dev")).To(MatchRegexp(`(?m)^web\s+%s\s+STARTED\s+web:\d/1\s+%s-build-2\s+UpToDate$`, app.Name, app.Name))
		Expect(cf("builds", "web", "--org", org, "-s", "dev", "-o", `jsonpath={range .items[*]}{.status.droplet.runImage}{"\n"}{end}`)).
			To(HaveSuffix("@%s\n", runImage.Digest), "the rebuilt droplet runs on the fixed run image")

		By("a restage stages the package again on the fixed stack")
		out = cf("restage", "web", "-o", org, "-s", "dev")
		Expect(out).To(MatchRegexp(`(?m)^App "web" is STARTED with droplet [0-9a-f-]{36}:$`))
		Expect(out).To(MatchRegexp(`(?m)^  run image:\s+\S+@%s$`, runImage.Digest))

		Expect(cfWithStdin("y\n", "delete-org", org)).To(HaveSuffix(fmt.Sprintf("org %q is deleted, with its namespace %s and its spaces'\n", org, orgGUID)))
	})
})

var _ = Describe("Pushing with kubectl cf", func() {
	var org, space string

	BeforeEach(func(ctx SpecContext) {
		org = "push-" + string(uuid.NewUUID())[:8]
		cf("create-org", org)
		space = guidOf(cf("create-space", org, "dev"))
		host := cp.Kpack().Registry.Host()
		cf("set-registry", org, "--server", host, "--username", "orgs/"+org, "--password", cp.Kpack().TenantPassword,
			"--droplet-repository", host+"/orgs/"+org)
		Eventually(buildReady(ctx, org2GUID(ctx, org), space)).Should(HaveField("Status", metav1.ConditionTrue))
		// Pushed apps run: none is left running on the node after its spec.
		DeferCleanup(func(ctx SpecContext) { cliDeleteApps(ctx, space) })
	})

	It("runs what it pushed with the scale its flags give, and logs, app, scale, stop, start and restart act on it", func(ctx SpecContext) {
		out := cf("push", "web", "-o", org, "-s", "dev", "-p", appSource(), "-m", "64M", "-k", "256M", "-u", "http", "--endpoint", "/")
		Expect(out).To(ContainSubstring("Process web: 1 instance, 64M memory, 256M disk; health check http GET /, 60s to start\n"))
		Expect(out).To(MatchRegexp(`(?m)^\s+\d+s\s+RUNNING\s+InstancesRunning: web 1/1 running$`))
		app := appNamed(ctx, org, "web")
		droplet := app.Spec.CurrentDropletRef.Name
		Expect(cf("apps", "--org", org, "-s", "dev")).To(MatchRegexp(`(?m)^web\s+%s\s+STARTED\s+web:1/1\s+%s\s+`, app.Name, droplet))

		By("logs: what the instance wrote (a line per health check), and what it writes from now on")
		Eventually(func() string { return cf("logs", "web", "-o", org, "-s", "dev", "--recent") }).Should(
			MatchRegexp(`(?m)^\S+ \[APP/PROC/WEB/0\] GET / 200 \d+ `))
		session := cfSession("logs", "web", "-o", org, "-s", "dev")
		Eventually(session.Out, time.Minute).Should(gbytes.Say(`(?m)^\S+ \[APP/PROC/WEB/0\] GET / 200 \d+ `))
		Expect(session.Command.Process.Signal(syscall.SIGINT)).To(Succeed())
		Eventually(session, 30*time.Second).Should(gexec.Exit(0))

		By("scale -i 2: both instances run")
		Expect(cf("scale", "web", "-o", org, "-s", "dev", "-i", "2")).To(Equal(`Scaled process web of app "web": 2 instances, 64M memory, 256M disk.` + "\n"))
		Eventually(func() string { return cf("app", "web", "--org", org, "-s", "dev") }, cliStarting).Should(And(
			MatchRegexp(`(?m)^instances:\s+2/2$`),
			MatchRegexp(`(?m)^#0\s+RUNNING\s+-\s+\d+\s+sha256:[0-9a-f]{12}$`),
			MatchRegexp(`(?m)^#1\s+RUNNING\s+-\s+\d+\s+sha256:[0-9a-f]{12}$`)))

		By("stop: no instance runs; start: they run again")
		Expect(cf("stop", "web", "-o", org, "-s", "dev")).To(Equal(`App "web" is STOPPED: its instances stop.` + "\n"))
		Eventually(func() []corev1.Pod { return cliInstancePods(ctx, app) }, cliStarting).Should(BeEmpty())
		Expect(cf("apps", "--org", org, "-s", "dev")).To(MatchRegexp(`(?m)^web\s+%s\s+STOPPED\s+web:0/2\s+%s\s+`, app.Name, droplet))
		Expect(cf("logs", "web", "-o", org, "-s", "dev", "--recent")).To(Equal(`App "web" has no instances: it is STOPPED.` + "\n"))
		out = cf("start", "web", "-o", org, "-s", "dev")
		Expect(out).To(HavePrefix("Starting app \"web\" with droplet %s\n", droplet))
		Expect(out).To(MatchRegexp(`(?m)^\s+\d+s\s+RUNNING\s+\w+: web [12]/2 running`))
		Eventually(func() string { return cf("apps", "--org", org, "-s", "dev") }, cliStarting).Should(
			MatchRegexp(`(?m)^web\s+%s\s+STARTED\s+web:2/2\s+`, app.Name))

		By("restart: every instance is replaced, one at a time")
		var before []types.UID
		for _, pod := range cliInstancePods(ctx, app) {
			before = append(before, pod.UID)
		}
		Expect(cf("restart", "web", "-o", org, "-s", "dev")).To(HavePrefix(`Restarting app "web": the instances of web are replaced one at a time.` + "\n"))
		Eventually(func(g Gomega) {
			pods := cliInstancePods(ctx, app)
			g.Expect(pods).To(HaveLen(2))
			for _, pod := range pods {
				g.Expect(before).NotTo(ContainElement(pod.UID), "pod %s is a new one", pod.Name)
			}
			g.Expect(cf("apps", "--org", org, "-s", "dev")).To(MatchRegexp(`(?m)^web\s+%s\s+STARTED\s+web:2/2\s+`, app.Name))
		}, cliStarting).Should(Succeed())
	})

	It("fails when the app does not run by --wait-timeout, with why and where to read what it wrote; --no-start leaves it stopped", func(ctx SpecContext) {
		stderr := cfFails("push", "web", "-o", org, "-s", "dev", "-p", sourceDir("Procfile", "web: echo crashing; exit 3\n"), "-m", "64M",
			"--wait-timeout", "20s")
		Expect(stderr).To(MatchRegexp(`^Error: app "web" is not running after 20s: process web: Running is False \(\w+\): 0 of 1 instances run the current droplet.*; `+
			`see what its instances wrote: kubectl cf logs web --recent -o %s -s dev\n$`, org))
		app := appNamed(ctx, org, "web")
		Expect(app.Spec.DesiredState).To(Equal(cfv1alpha1.StartedState), "the app stays started with its new droplet")
		Eventually(func() string { return cf("app", "web", "--org", org, "-s", "dev") }, cliStarting).Should(And(
			MatchRegexp(`(?m)^running:\s+False \(CrashLoop\): `), MatchRegexp(`(?m)^#0\s+CRASHED\s+CrashLoop\s+\d+\s+sha256:`)))
		Expect(cf("logs", "web", "-o", org, "-s", "dev", "--recent")).To(MatchRegexp(`(?m)^\S+ \[APP/PROC/WEB/0\] crashing$`))

		By("--no-start: the droplet staged and current, the app stopped")
		out := cf("push", "web", "-o", org, "-s", "dev", "-p", appSource(), "--no-start")
		Expect(out).To(MatchRegexp(`(?m)^App "web" is STOPPED with droplet [0-9a-f-]{36}:$`))
		Expect(out).NotTo(ContainSubstring("Waiting for"))
		Eventually(func() []corev1.Pod { return cliInstancePods(ctx, app) }, cliStarting).Should(BeEmpty())
		Expect(cf("apps", "--org", org, "-s", "dev")).To(MatchRegexp(`(?m)^web\s+%s\s+STOPPED\s+web:0/1\s+%s\s+`, app.Name, currentDroplet(ctx, app)()))
	})

	It("sets the app's buildpacks with -b, finds the app again by its name in any case, and -b default resets them", func(ctx SpecContext) {
		// Named buildpacks are all required, as in CF: the source must be one that both detect.
		out := cf("push", "web", "-o", org, "-s", "dev", "-p", appSource("Procfile", "web: httpd -f -p $PORT\n"), "-b", buildpacks.StaticfileID, "-b", buildpacks.ProcfileID)
		Expect(out).To(MatchRegexp(`(?m)^  buildpacks:\s+cf-hnc/staticfile \d+\.\d+\.\d+, cf-hnc/procfile \d+\.\d+\.\d+$`))
		app := appNamed(ctx, org, "web")
		Expect(app.Spec.Lifecycle.Data.Buildpacks).To(Equal([]string{buildpacks.StaticfileID, buildpacks.ProcfileID}))
		Expect(getBuild(ctx, space, app.Spec.CurrentDropletRef.Name).Status.Builder).To(HavePrefix("cf-lifecycle-"))

		out = cf("push", "WEB", "-o", org, "-s", "dev", "-p", appSource(), "-b", "default")
		Expect(out).To(ContainSubstring(`Updated the lifecycle of app "web": buildpacks the default Builder's, stack the default Builder's`))
		Expect(out).NotTo(ContainSubstring("Created app"))
		Expect(appNamed(ctx, org, "web").Spec.Lifecycle.Data.Buildpacks).To(BeEmpty())
		apps := &cfv1alpha1.CFAppList{}
		Expect(k8s.List(ctx, apps, client.InNamespace(space))).To(Succeed())
		Expect(apps.Items).To(HaveLen(1))
	})

	It("lets a space developer, with nothing but the CF roles, push to its space by its namespace", func(ctx SpecContext) {
		user := "dev-" + string(uuid.NewUUID())[:8]
		spaceDeveloper(ctx, user, space)

		out := cf("push", "web", "-n", space, "-p", appSource(), "--as", user)
		Expect(out).To(MatchRegexp(`(?m)^App "web" is STARTED with droplet ([0-9a-f-]{36}):$`))
		Expect(cf("apps", "-n", space, "--as", user)).To(MatchRegexp(`(?m)^web\s+[0-9a-f-]{36}\s+STARTED\s+`))

		By("listing the orgs by name is for operators")
		Expect(cfFails("push", "web", "-o", org, "-s", "dev", "-p", appSource(), "--as", user)).To(ContainSubstring("you may not list orgs (only operators may); name your space by its namespace instead, --namespace <space GUID>"))
	})

	DescribeTable("refuses a lifecycle that cannot be built, before anything is uploaded or created",
		func(ctx SpecContext, args []string, message string) {
			stderr := cfFails(append([]string{"push", "web", "-o", org, "-s", "dev", "-p", appSource()}, args...)...)
			Expect(stderr).To(HavePrefix("Error: " + message))
			expectNothingIn(ctx, space)
		},
		Entry("an unknown buildpack", []string{"-b", buildpacks.ProcfileID, "-b", "ruby_buildpack"},
			`app "web": --buildpack: Invalid value: "ruby_buildpack": unknown buildpack; the store has: cf-hnc/procfile, cf-hnc/staticfile`),
		Entry("an unknown stack", []string{"--stack", "cflinuxfs3"},
			`app "web": --stack: Invalid value: "cflinuxfs3": unknown stack; the stacks are: cflinuxfs4`),
	)

	It("creates nothing when the upload fails", func(ctx SpecContext) {
		other := "other-" + string(uuid.NewUUID())[:8]
		host := cp.Kpack().Registry.Host()
		// Credentials of another tenant: cf-hnc finds credentials for the host, the registry
		// refuses them below this org's repository.
		cf("set-registry", org, "--server", host, "--username", "orgs/"+other, "--password", cp.Kpack().TenantPassword)
		Eventually(func() string {
			copied := &corev1.Secret{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "cf-registry-org"}, copied)).To(Succeed())
			creds, err := dockerconfig.Parse(copied)
			Expect(err).NotTo(HaveOccurred())
			return creds[host].Username
		}).Should(Equal("orgs/"+other), "HNC has copied the rotated credentials into the space")
		stderr := cfFails("push", "web", "-o", org, "-s", "dev", "-p", appSource())
		Expect(stderr).To(HavePrefix(fmt.Sprintf("Error: uploading the package to %s/orgs/%s/%s/packages/", host, org, space)))
		expectNothingIn(ctx, space)
	})

	It("shows why staging failed with each step, keeps the failed build, and a retry is not queued behind it", func(ctx SpecContext) {
		cf("push", "web", "-o", org, "-s", "dev", "-p", appSource())
		app := appNamed(ctx, org, "web")
		droplet := app.Spec.CurrentDropletRef.Name

		session := cfSession("push", "web", "-o", org, "-s", "dev", "-p", sourceDir("Procfile", "web ./server\n"))
		Eventually(session, 2*time.Minute).Should(gexec.Exit(1))
		out := string(session.Out.Contents())
		failure := fmt.Sprintf("kpack build %s-build-2 failed in step build (exit code 51): ", app.Name)
		malformed := `Procfile:1: malformed line "web ./server", want "<type>: <command>"`
		Expect(out).To(MatchRegexp(`(?m)^\s+\d+s\s+FAILED\s+Failed: %s.*%s`, regexp.QuoteMeta(failure), regexp.QuoteMeta(malformed)))
		// The buildpack's and the lifecycle's lines reach the pod's log from two processes, in
		// either order.
		summary := regexp.MustCompile(`(?m)^Staging failed: Failed: ` + regexp.QuoteMeta(failure) + `.*$`).FindString(out)
		Expect(summary).To(And(ContainSubstring(malformed), ContainSubstring("ERROR: failed to build: exit status 1")), out)
		Expect(out).To(ContainSubstring("Steps of kpack build %s-build-2 (pod %s-build-2-build-pod):\n", app.Name, app.Name))
		Expect(out).To(MatchRegexp(`(?m)^  prepare\s+completed\n  analyze\s+completed\n  detect\s+completed\n  restore\s+completed\n` +
			`  build\s+exited with code 51: .*\n(?:.*\n)*  export\s+waiting \(PodInitializing\)`))
		Expect(out).To(MatchRegexp(`(?m)^--- detect \(completed\)\n(?:    .*\n)*    cf-hnc/procfile \d+\.\d+\.\d+$`), "the lifecycle's detector's own log")
		Expect(out).To(MatchRegexp(`(?m)^--- build \(exited with code 51: (?:.*\n)*    %s$`, regexp.QuoteMeta(malformed)), "the buildpack's own log")
		Expect(string(session.Err.Contents())).To(MatchRegexp(`^Error: staging app "web" failed: Failed: %s`, regexp.QuoteMeta(failure)))
		Expect(currentDroplet(ctx, app)()).To(Equal(droplet), "the app keeps its droplet")
		Expect(cf("builds", "web", "--org", org, "-s", "dev")).To(MatchRegexp(`(?m)^[0-9a-f-]{36}\s+\S+\s+FAILED\s+Failed\s+-\s+-\s+-$`))

		Expect(cf("push", "web", "-o", org, "-s", "dev", "-p", appSource())).To(ContainSubstring(`App "web" is STARTED`))
	})

	It("deletes what it created for a build that did not finish, on a timeout and on an interrupt, so that a retry goes through", func(ctx SpecContext) {
		cf("push", "web", "-o", org, "-s", "dev", "-p", appSource())
		app := appNamed(ctx, org, "web")
		// A build of another client that never finishes (its package is never uploaded) holds
		// every later build of the app in the queue.
		blocking := blockingBuild(ctx, app)
		before := objectsIn(ctx, space)

		stderr := cfFails("push", "web", "-o", org, "-s", "dev", "-p", appSource(), "--timeout", "3s")
		Expect(stderr).To(MatchRegexp(`^Error: staging did not finish within 3s; deleted build [0-9a-f-]{36} and package [0-9a-f-]{36}, ` +
			`so that a retry is not queued behind them\n$`))
		Expect(objectsIn(ctx, space)).To(Equal(before))

		session := cfSession("push", "web", "-o", org, "-s", "dev", "-p", appSource())
		Eventually(session.Out, time.Minute).Should(gbytes.Say(`STAGING\s+Queued: builds of app %s stage one at a time; waiting for build %s`, app.Name, blocking.Name))
		Expect(session.Command.Process.Signal(syscall.SIGINT)).To(Succeed())
		Eventually(session, 30*time.Second).Should(gexec.Exit(1))
		Expect(string(session.Err.Contents())).To(MatchRegexp(`^Error: interrupted while staging; deleted build [0-9a-f-]{36} and package [0-9a-f-]{36}, ` +
			`so that a retry is not queued behind them\n$`))
		Expect(objectsIn(ctx, space)).To(Equal(before))

		Expect(k8s.Delete(ctx, blocking)).To(Succeed())
		Expect(cf("push", "web", "-o", org, "-s", "dev", "-p", appSource())).To(ContainSubstring(`App "web" is STARTED`))
	})

	It("deletes a new app with what it created for it when its first push does not finish", func(ctx SpecContext) {
		stderr := cfFails("push", "web", "-o", org, "-s", "dev", "-p", appSource(), "--timeout", "1ms")
		Expect(stderr).To(MatchRegexp(`^Error: staging did not finish within 1ms; deleted build [0-9a-f-]{36}, package [0-9a-f-]{36} ` +
			`and app [0-9a-f-]{36}, so that a retry is not queued behind them\n$`))
		Eventually(func() []string { return objectsIn(ctx, space) }).Should(BeEmpty())
		Expect(cf("push", "web", "-o", org, "-s", "dev", "-p", appSource())).To(ContainSubstring(`App "web" is STARTED`))
	})
})

var _ = Describe("Restaging with kubectl cf", Ordered, func() {
	var org, space string

	BeforeAll(func(ctx SpecContext) {
		org = "restage-" + string(uuid.NewUUID())[:8]
		cf("create-org", org)
		space = guidOf(cf("create-space", org, "dev"))
		host := cp.Kpack().Registry.Host()
		cf("set-registry", org, "--server", host, "--username", "orgs/"+org, "--password", cp.Kpack().TenantPassword,
			"--droplet-repository", host+"/orgs/"+org)
		Expect(cf("set-upgrade-policy", org, "Held")).To(Equal(fmt.Sprintf("org %q: the buildpack upgrade policy is Held already\n", org)))
	})

	AfterAll(func(ctx SpecContext) { cliDeleteApps(ctx, space) })

	It("runs the droplet that a Held buildpack upgrade staged, without staging again; switching the org to Automatic runs the others", func(ctx SpecContext) {
		// Apps of the procfile buildpack, which the specs upgrade; the static sites of the
		// other specs stay out of it.
		procfileApp := sourceDir("Procfile", "web: httpd -f -p $PORT\n")
		cf("push", "web", "-o", org, "-s", "dev", "-p", procfileApp)
		cf("push", "worker", "-o", org, "-s", "dev", "-p", procfileApp, "--no-start")
		app, worker := appNamed(ctx, org, "web"), appNamed(ctx, org, "worker")
		droplet := app.Spec.CurrentDropletRef.Name
		upgrade, err := cp.UpgradeBuildpack(ctx, buildpacks.ProcfileID)
		Expect(err).NotTo(HaveOccurred())

		Eventually(func() string { return cf("apps", "--org", org, "-s", "dev") }, 2*time.Minute).Should(MatchRegexp(
			`(?m)^web\s+%s\s+STARTED\s+web:\d/1\s+%s\s+UpgradeHeld\s+%s-build-\d+$`, app.Name, droplet, app.Name))
		Eventually(dropletCurrent(ctx, worker), 2*time.Minute).Should(HaveField("Reason", cfv1alpha1.UpgradeHeldReason))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
		held := app.Status.HeldDropletRef.Name
		Expect(cf("builds", "web", "--org", org, "-s", "dev")).To(MatchRegexp(
			`(?m)^%s\s+\S+\s+STAGED\s+BuildSucceeded\s+%s\s+BUILDPACK\s+sha256:[0-9a-f]{12}\s+held$`, held, droplet))
		builds := objectsIn(ctx, space)

		out := cf("restage", "web", "-o", org, "-s", "dev")
		Expect(out).To(MatchRegexp(`(?m)^\s+\d+s\s+RUNNING\s+InstancesRunning: web 1/1 running$`), "restage waits for the app to run")
		Expect(out).To(HavePrefix(fmt.Sprintf(`App "web" now runs its held droplet %s, which kpack rebuilt from its current package because of BUILDPACK; nothing needed staging.`, held)))
		Expect(out).To(MatchRegexp(`(?m)^  buildpacks:.*cf-hnc/procfile %s`, regexp.QuoteMeta(upgrade.Version)))
		Expect(objectsIn(ctx, space)).To(Equal(builds), "no build")
		Eventually(func() string { return cf("apps", "--org", org, "-s", "dev") }).Should(MatchRegexp(
			`(?m)^web\s+%s\s+STARTED\s+web:\d/1\s+%s\s+UpToDate$`, app.Name, held))

		By("switching the org to Automatic: the app still held runs its held droplet")
		heldForWorker := worker.Status.HeldDropletRef.Name
		cf("set-upgrade-policy", org, "Automatic")
		Eventually(currentDroplet(ctx, worker)).Should(Equal(heldForWorker))
		Eventually(dropletCurrent(ctx, worker)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
	})

	It("stages the current package again when no droplet is held", func(ctx SpecContext) {
		app := appNamed(ctx, org, "web")
		before := app.Spec.CurrentDropletRef.Name
		out := cf("restage", "web", "-o", org, "-s", "dev")
		Expect(out).To(HavePrefix(fmt.Sprintf("Restaging app \"web\" in space \"dev\" of org %q\nStaging build ", org)))
		Expect(out).To(MatchRegexp(`(?m)^App "web" is STARTED with droplet [0-9a-f-]{36}:$`))
		Expect(currentDroplet(ctx, app)()).NotTo(Equal(before))
		Expect(getBuild(ctx, space, app.Spec.CurrentDropletRef.Name).Spec.PackageRef.Name).
			To(Equal(getBuild(ctx, space, before).Spec.PackageRef.Name), "the same package")
	})
})

// pluginBinary is the kubectl-cf binary, built once.
var pluginBinary = sync.OnceValue(func() string {
	binary, err := gexec.Build("code.cloudfoundry.org/cf-hnc/cmd/kubectl-cf")
	Expect(err).NotTo(HaveOccurred())
	return binary
})

// cfSession starts the plugin binary against the control plane.
func cfSession(args ...string) *gexec.Session {
	GinkgoHelper()
	return cfSessionWithStdin("", args...)
}

func cfSessionWithStdin(stdin string, args ...string) *gexec.Session {
	GinkgoHelper()
	cmd := exec.Command(pluginBinary(), append(args, "--kubeconfig", cp.Kubeconfig)...)
	cmd.Stdin = strings.NewReader(stdin)
	fmt.Fprintf(GinkgoWriter, "$ kubectl cf %s\n", strings.Join(args, " "))
	session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	return session
}

// cf runs the plugin, expects it to succeed and returns its output.
func cf(args ...string) string {
	GinkgoHelper()
	return cfWithStdin("", args...)
}

func cfWithStdin(stdin string, args ...string) string {
	GinkgoHelper()
	session := cfSessionWithStdin(stdin, args...)
	Eventually(session, 3*time.Minute).Should(gexec.Exit(0), "kubectl cf %s", strings.Join(args, " "))
	return string(session.Out.Contents())
}

// cfFails runs the plugin, expects it to fail and returns what it wrote on stderr.
func cfFails(args ...string) string {
	GinkgoHelper()
	session := cfSession(args...)
	Eventually(session, 3*time.Minute).Should(gexec.Exit(1))
	return string(session.Err.Contents())
}

var guidPattern = regexp.MustCompile(`namespace ([0-9a-f-]{36})`)

// guidOf is the GUID that create-org or create-space printed.
func guidOf(out string) string {
	GinkgoHelper()
	match := guidPattern.FindStringSubmatch(out)
	Expect(match).NotTo(BeNil(), "no GUID in %q", out)
	return match[1]
}

// org2GUID is the GUID of the org with a display name.
func org2GUID(ctx SpecContext, name string) string {
	GinkgoHelper()
	orgs := &cfv1alpha1.CFOrgList{}
	Expect(k8s.List(ctx, orgs, client.InNamespace(root))).To(Succeed())
	for _, o := range orgs.Items {
		if o.Spec.DisplayName == name {
			return o.Name
		}
	}
	Fail("no org " + name)
	return ""
}

// appNamed is the app of a name in the space "dev" of an org.
func appNamed(ctx SpecContext, org, name string) *cfv1alpha1.CFApp {
	GinkgoHelper()
	spaces := &cfv1alpha1.CFSpaceList{}
	Expect(k8s.List(ctx, spaces, client.InNamespace(org2GUID(ctx, org)))).To(Succeed())
	Expect(spaces.Items).NotTo(BeEmpty())
	apps := &cfv1alpha1.CFAppList{}
	Expect(k8s.List(ctx, apps, client.InNamespace(spaces.Items[0].Name))).To(Succeed())
	for i := range apps.Items {
		if apps.Items[i].Spec.DisplayName == name {
			return &apps.Items[i]
		}
	}
	Fail("no app " + name)
	return nil
}

// appSource is a directory with a small app's source, and more files given as name, content
// pairs.
func appSource(files ...string) string {
	GinkgoHelper()
	return sourceDir(append([]string{"Staticfile", "", "index.html", "<h1>web</h1>\n<p>\n"}, files...)...)
}

// sourceDir writes a directory of files, given as name, content, name, content...
func sourceDir(files ...string) string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	for i := 0; i+1 < len(files); i += 2 {
		Expect(os.WriteFile(filepath.Join(dir, files[i]), []byte(files[i+1]), 0o644)).To(Succeed())
	}
	return dir
}

// packagedFiles lists the files of the app's newest package image, read with the org's
// tenant account.
func packagedFiles(ctx SpecContext, app *cfv1alpha1.CFApp, org string) []string {
	GinkgoHelper()
	build := getBuild(ctx, app.Namespace, app.Spec.CurrentDropletRef.Name)
	pkg := &cfv1alpha1.CFPackage{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: build.Spec.PackageRef.Name}, pkg)).To(Succeed())
	ref, err := name.ParseReference(pkg.Spec.Source.Registry.Image)
	Expect(err).NotTo(HaveOccurred())
	img, err := remote.Image(ref, remote.WithAuth(&authn.Basic{Username: "orgs/" + org, Password: cp.Kpack().TenantPassword}))
	Expect(err).NotTo(HaveOccurred())
	fs := mutate.Extract(img)
	defer fs.Close()
	var names []string
	r := tar.NewReader(fs)
	for {
		hdr, err := r.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		Expect(err).NotTo(HaveOccurred())
		names = append(names, hdr.Name)
	}
}

// blockingBuild is a build of the app that never finishes: its package is never uploaded.
func blockingBuild(ctx SpecContext, app *cfv1alpha1.CFApp) *cfv1alpha1.CFBuild {
	GinkgoHelper()
	pkg := &cfv1alpha1.CFPackage{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: string(uuid.NewUUID())},
		Spec:       cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: app.Name}},
	}
	Expect(k8s.Create(ctx, pkg)).To(Succeed())
	build := &cfv1alpha1.CFBuild{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: app.Name},
			PackageRef: corev1.LocalObjectReference{Name: pkg.Name}, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}},
	}
	Expect(k8s.Create(ctx, build)).To(Succeed())
	Eventually(func() string {
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(build), build)).To(Succeed())
		if c := meta.FindStatusCondition(build.Status.Conditions, cfv1alpha1.SucceededCondition); c != nil {
			return c.Reason
		}
		return ""
	}).Should(Equal(cfv1alpha1.WaitingReason))
	// Builds of an app stage oldest first, by creation timestamps of whole seconds and then by
	// name: a build created later must be created in a later second to queue behind this one.
	time.Sleep(time.Until(build.CreationTimestamp.Add(time.Second)))
	return build
}

// objectsIn names the apps, packages and builds in a space.
func objectsIn(ctx SpecContext, space string) []string {
	GinkgoHelper()
	var names []string
	for _, list := range []client.ObjectList{&cfv1alpha1.CFAppList{}, &cfv1alpha1.CFPackageList{}, &cfv1alpha1.CFBuildList{}} {
		Expect(k8s.List(ctx, list, client.InNamespace(space))).To(Succeed())
		Expect(meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if obj.GetDeletionTimestamp().IsZero() {
				names = append(names, fmt.Sprintf("%T %s", obj, obj.GetName()))
			}
			return nil
		})).To(Succeed())
	}
	return names
}

// expectNothingIn expects no app, package or build in a space.
func expectNothingIn(ctx SpecContext, space string) {
	GinkgoHelper()
	Expect(objectsIn(ctx, space)).To(BeEmpty())
}

// cliStarting is how long the instances of a pushed app may take to start, stop or be replaced:
// placing them, pulling the droplet from the local registry and passing their health checks.
const cliStarting = 2 * time.Minute

// cliInstancePods are the pods of an app's instances, also those being deleted.
func cliInstancePods(ctx SpecContext, app *cfv1alpha1.CFApp) []corev1.Pod {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(k8s.List(ctx, pods, client.InNamespace(app.Namespace), client.MatchingLabels{cfv1alpha1.AppLabel: app.Name},
		client.HasLabels{cfv1alpha1.ProcessLabel})).To(Succeed())
	return pods.Items
}

// cliDeleteApps deletes the apps of a space, and with them their instances.
func cliDeleteApps(ctx SpecContext, space string) {
	GinkgoHelper()
	Expect(k8s.DeleteAllOf(ctx, &cfv1alpha1.CFApp{}, client.InNamespace(space))).To(Succeed())
}
