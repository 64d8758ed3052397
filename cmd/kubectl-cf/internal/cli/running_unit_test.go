package cli

import (
	"bytes"
	"strings"
	"time"

	"code.cloudfoundry.org/cf-hnc/cf"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// process is a process of an app with a GUID, of which running instances run.
func process(app, processType string, instances, running int32) cfv1alpha1.CFProcess {
	p := cfv1alpha1.NewWebProcess(&cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: "space", Name: app}})
	p.Name = cfv1alpha1.ProcessName(app, processType)
	p.Spec.ProcessType = processType
	p.Spec.Instances = instances
	p.Status.RunningInstances = running
	return *p
}

// runningOn is a process that cf-hnc runs with a droplet, its Running condition and instances.
func runningOn(p cfv1alpha1.CFProcess, droplet string, running metav1.Condition, instances ...cfv1alpha1.InstanceStatus) cfv1alpha1.CFProcess {
	p.Status.Droplet = droplet
	p.Status.Conditions = []metav1.Condition{running}
	p.Status.Instances = instances
	return p
}

func instance(index int32, state cfv1alpha1.InstanceState, reason string, restarts int32, image string) cfv1alpha1.InstanceStatus {
	return cfv1alpha1.InstanceStatus{Index: index, State: state, Reason: reason, Restarts: restarts, Image: image}
}

var _ = Describe("the flags that scale a process", func() {
	// parse parses args as push's flags (with the health check's) or scale's.
	parse := func(withHealthChecks bool, args ...string) (cf.ProcessChange, error) {
		var f processFlags
		cmd := &cobra.Command{}
		f.addScaleFlags(cmd)
		if withHealthChecks {
			f.addHealthCheckFlags(cmd)
		}
		Expect(cmd.ParseFlags(args)).To(Succeed())
		return f.parse(cmd)
	}

	DescribeTable("take the cf CLI's sizes and health checks",
		func(args []string, want cf.ProcessChange) {
			change, err := parse(true, args...)
			Expect(err).NotTo(HaveOccurred())
			Expect(change).To(Equal(want))
		},
		Entry("nothing", []string{}, cf.ProcessChange{}),
		Entry("instances, 0 among them", []string{"-i", "0"}, cf.ProcessChange{Instances: ptr.To[int32](0)}),
		Entry("M", []string{"-m", "256M", "-k", "100m"}, cf.ProcessChange{MemoryMB: ptr.To[int64](256), DiskMB: ptr.To[int64](100)}),
		Entry("MB and GB", []string{"-m", "512MB", "-k", "2gb"}, cf.ProcessChange{MemoryMB: ptr.To[int64](512), DiskMB: ptr.To[int64](2048)}),
		Entry("G, the largest", []string{"--memory", "64G"}, cf.ProcessChange{MemoryMB: ptr.To[int64](65536)}),
		Entry("an http check", []string{"-u", "http", "--endpoint", "/health"},
			cf.ProcessChange{HealthCheck: ptr.To(cfv1alpha1.HTTPHealthCheck), Endpoint: ptr.To("/health")}),
		Entry("a process check", []string{"--health-check-type", "process"}, cf.ProcessChange{HealthCheck: ptr.To(cfv1alpha1.ProcessHealthCheck)}),
	)

	DescribeTable("refuse what the process could not have, naming the flag",
		func(args []string, message string) {
			_, err := parse(true, args...)
			Expect(err).To(MatchError(message))
		},
		Entry("too many instances", []string{"-i", "101"}, "-i 101: a process has 0 to 100 instances"),
		Entry("fewer than none", []string{"-i", "-1"}, "-i -1: a process has 0 to 100 instances"),
		Entry("no unit", []string{"-m", "256"}, `-m "256": give a whole number with a unit, M or G (MB and GB do too), as in 256M or 1G`),
		Entry("a fraction", []string{"-k", "1.5G"}, `-k "1.5G": give a whole number with a unit, M or G (MB and GB do too), as in 256M or 1G`),
		Entry("another unit", []string{"-m", "1T"}, `-m "1T": give a whole number with a unit, M or G (MB and GB do too), as in 256M or 1G`),
		Entry("too little", []string{"-m", "8M"}, "-m 8M: give 16M to 64G"),
		Entry("too much", []string{"-k", "65G"}, "-k 65G: give 16M to 64G"),
		Entry("far too much", []string{"-k", "99999999999999999999G"}, "-k 99999999999999999999G: give 16M to 64G"),
		Entry("an unknown check", []string{"-u", "tcp"}, `-u "tcp": the health check type is port, http or process`),
		Entry("an endpoint without an http check", []string{"--endpoint", "/health"},
			`--endpoint "/health": only an http health check has an endpoint: give -u http with it`),
		Entry("an endpoint with a port check", []string{"-u", "port", "--endpoint", "/health"},
			`--endpoint "/health": only an http health check has an endpoint: give -u http with it`),
		Entry("an endpoint that is no path", []string{"-u", "http", "--endpoint", "health"},
			`--endpoint "health": give a path that begins with /, of at most 256 characters`),
	)

	It("leave the health check flags to push", func() {
		var f processFlags
		cmd := &cobra.Command{}
		f.addScaleFlags(cmd)
		Expect(cmd.ParseFlags([]string{"-u", "http"})).To(MatchError(ContainSubstring("unknown shorthand flag: 'u'")))
	})

	DescribeTable("change a process's spec as they say, and only then say it changed",
		func(change cf.ProcessChange, before cfv1alpha1.HealthCheck, changed bool, want cfv1alpha1.HealthCheck) {
			spec := process("a", "web", 1, 0).Spec
			spec.HealthCheck = before
			Expect(change.Apply(&spec)).To(Equal(changed))
			Expect(spec.HealthCheck).To(Equal(want))
		},
		Entry("nothing", cf.ProcessChange{}, cfv1alpha1.HealthCheck{Type: "port", TimeoutSeconds: 60}, false,
			cfv1alpha1.HealthCheck{Type: "port", TimeoutSeconds: 60}),
		Entry("http without an endpoint: /", cf.ProcessChange{HealthCheck: ptr.To(cfv1alpha1.HTTPHealthCheck)},
			cfv1alpha1.HealthCheck{Type: "port", TimeoutSeconds: 60}, true, cfv1alpha1.HealthCheck{Type: "http", Endpoint: "/", TimeoutSeconds: 60}),
		Entry("http again keeps the endpoint", cf.ProcessChange{HealthCheck: ptr.To(cfv1alpha1.HTTPHealthCheck)},
			cfv1alpha1.HealthCheck{Type: "http", Endpoint: "/health", TimeoutSeconds: 60}, false,
			cfv1alpha1.HealthCheck{Type: "http", Endpoint: "/health", TimeoutSeconds: 60}),
		Entry("a new endpoint", cf.ProcessChange{HealthCheck: ptr.To(cfv1alpha1.HTTPHealthCheck), Endpoint: ptr.To("/up")},
			cfv1alpha1.HealthCheck{Type: "http", Endpoint: "/health", TimeoutSeconds: 30}, true,
			cfv1alpha1.HealthCheck{Type: "http", Endpoint: "/up", TimeoutSeconds: 30}),
		Entry("port drops the endpoint", cf.ProcessChange{HealthCheck: ptr.To(cfv1alpha1.PortHealthCheck)},
			cfv1alpha1.HealthCheck{Type: "http", Endpoint: "/health", TimeoutSeconds: 60}, true,
			cfv1alpha1.HealthCheck{Type: "port", TimeoutSeconds: 60}),
	)

	It("scale a process, reporting a change only when a value differs", func() {
		spec := process("a", "web", 1, 0).Spec
		Expect(cf.ProcessChange{Instances: ptr.To[int32](1), MemoryMB: ptr.To[int64](1024)}.Apply(&spec)).To(BeFalse())
		Expect(cf.ProcessChange{Instances: ptr.To[int32](3), DiskMB: ptr.To[int64](256)}.Apply(&spec)).To(BeTrue())
		Expect(describeScale(spec)).To(Equal("3 instances, 1G memory, 256M disk"))
		spec.Instances, spec.MemoryMB = 1, 1536
		Expect(describeScale(spec)).To(Equal("1 instance, 1536M memory, 256M disk"))
	})
})

var _ = Describe("a new web process", func() {
	It("is named, labelled, owned and defaulted as cf-hnc makes it", func() {
		app := &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: "space", Name: "guid", UID: "uid"}}
		p := cfv1alpha1.NewWebProcess(app)
		Expect(p.Name).To(Equal(cfv1alpha1.ProcessName("guid", "web")))
		Expect(p.Namespace).To(Equal("space"))
		Expect(p.Labels).To(Equal(map[string]string{cfv1alpha1.AppLabel: "guid", cfv1alpha1.ProcessTypeLabel: "web"}))
		Expect(p.OwnerReferences).To(Equal([]metav1.OwnerReference{{APIVersion: "workloads.cloudfoundry.org/v1alpha1", Kind: "CFApp",
			Name: "guid", UID: "uid", Controller: ptr.To(true)}}))
		Expect(p.Spec).To(Equal(cfv1alpha1.CFProcessSpec{AppRef: corev1.LocalObjectReference{Name: "guid"}, ProcessType: "web",
			Instances: 1, MemoryMB: 1024, DiskMB: 1024, HealthCheck: cfv1alpha1.HealthCheck{Type: "port", TimeoutSeconds: 60}}))
	})
})

var _ = Describe("waiting for an app to run", func() {
	const droplet, image = "b2", "r/a@sha256:2"
	starting := condition(cfv1alpha1.RunningCondition, metav1.ConditionFalse, cfv1alpha1.StartingReason, "0 of 2 instances run the current droplet")
	crashing := condition(cfv1alpha1.RunningCondition, metav1.ConditionFalse, cfv1alpha1.CrashLoopReason,
		"0 of 1 instances run the current droplet; instance 0 CRASHED (CrashLoop)")
	allRunning := condition(cfv1alpha1.RunningCondition, metav1.ConditionTrue, cfv1alpha1.InstancesRunningReason, "1 of 1 instances run the current droplet")
	web, worker := process("a", "web", 2, 0), process("a", "worker", 1, 0)

	DescribeTable("shows how many instances of each process run the droplet, and is done once one of each does",
		func(processes []cfv1alpha1.CFProcess, want string, finished bool, why string) {
			p, gotWhy := runProgress(processes, droplet, image)
			Expect(p.String()).To(Equal(want))
			Expect(p.finished).To(Equal(finished))
			Expect(gotWhy).To(Equal(why))
		},
		Entry("no process yet", nil, "STARTING Pending: cf-hnc has not made the app's web process yet", false,
			"cf-hnc has not made the app's web process yet"),
		Entry("not reported on", []cfv1alpha1.CFProcess{web}, "STARTING Pending: web 0/2 running", false,
			"process web: cf-hnc has not reported on its instances of droplet b2 yet"),
		Entry("still reported stopped", []cfv1alpha1.CFProcess{runningOn(web, droplet,
			condition(cfv1alpha1.RunningCondition, metav1.ConditionFalse, cfv1alpha1.AppStoppedReason, "the app is stopped"))},
			"STARTING Pending: web 0/2 running", false, "process web: cf-hnc has not reported on its instances of droplet b2 yet"),
		Entry("still running the droplet before", []cfv1alpha1.CFProcess{runningOn(web, "b1", allRunning, instance(0, "RUNNING", "", 0, "r/a@sha256:1"))},
			"STARTING Pending: web 0/2 running", false, "process web: cf-hnc has not reported on its instances of droplet b2 yet"),
		Entry("starting", []cfv1alpha1.CFProcess{runningOn(web, droplet, starting, instance(0, "STARTING", "Starting", 0, image),
			instance(1, "RUNNING", "", 0, "r/a@sha256:1"))},
			"STARTING Starting: web 0/2 running, instance 0 STARTING (Starting), instance 1 RUNNING (an older droplet)", false,
			"process web: Running is False (Starting): 0 of 2 instances run the current droplet"),
		Entry("one of two running", []cfv1alpha1.CFProcess{runningOn(web, droplet, starting, instance(0, "RUNNING", "", 0, image),
			instance(1, "DOWN", "Unschedulable", 0, image))},
			"RUNNING  Starting: web 1/2 running, instance 1 DOWN (Unschedulable)", true,
			"process web: Running is False (Starting): 0 of 2 instances run the current droplet"),
		Entry("web runs, the worker crashes", []cfv1alpha1.CFProcess{runningOn(web, droplet, allRunning, instance(0, "RUNNING", "", 0, image)),
			runningOn(worker, droplet, crashing, instance(0, "CRASHED", "CrashLoop", 3, image))},
			"CRASHED  CrashLoop: web 1/2 running; worker 0/1 running, instance 0 CRASHED (CrashLoop, 3 restarts)", false,
			"process worker: Running is False (CrashLoop): 0 of 1 instances run the current droplet; instance 0 CRASHED (CrashLoop)"),
		Entry("running, a process of no instances aside", []cfv1alpha1.CFProcess{runningOn(web, droplet, allRunning, instance(0, "RUNNING", "", 0, image)),
			process("a", "clock", 0, 0)},
			"RUNNING  InstancesRunning: web 1/2 running", true, "process web: Running is True: 1 of 1 instances run the current droplet"),
		Entry("no instances at all", []cfv1alpha1.CFProcess{process("a", "web", 0, 0)},
			"STARTED  NoInstances: every process has 0 instances", true, ""),
	)
})

var _ = Describe("showing an app", func() {
	It("shows its state and droplet, and each process with its instances", func() {
		app := &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Name: "g1"},
			Spec: cfv1alpha1.CFAppSpec{DisplayName: "web", DesiredState: cfv1alpha1.StartedState, CurrentDropletRef: corev1.LocalObjectReference{Name: "b1"}},
			Status: cfv1alpha1.CFAppStatus{Droplet: &cfv1alpha1.AppDropletStatus{Stack: "cflinuxfs4"}, HeldDropletRef: &corev1.LocalObjectReference{Name: "b2"},
				Conditions: []metav1.Condition{condition(cfv1alpha1.DropletCurrentCondition, metav1.ConditionFalse, cfv1alpha1.UpgradeHeldReason, "restage to run b2")}}}
		web := runningOn(process("g1", "web", 2, 1), "b1",
			condition(cfv1alpha1.RunningCondition, metav1.ConditionFalse, cfv1alpha1.CrashLoopReason, "1 of 2 instances run the current droplet"),
			instance(0, "RUNNING", "", 0, "r/a@sha256:0123456789abcdef"), instance(1, "CRASHED", "CrashLoop", 4, "r/a@sha256:0123456789abcdef"))
		web.Spec.MemoryMB, web.Spec.HealthCheck = 256, cfv1alpha1.HealthCheck{Type: "http", Endpoint: "/health", TimeoutSeconds: 30}
		worker := process("g1", "worker", 1, 0)
		worker.Spec.Command, worker.Spec.HealthCheck = "./work", cfv1alpha1.HealthCheck{Type: "process"}

		var out bytes.Buffer
		Expect(writeApp(&out, app, []cfv1alpha1.CFProcess{web, worker})).To(Succeed())
		Expect(out.String()).To(Equal(strings.Join([]string{
			"name:             web",
			"guid:             g1",
			"state:            STARTED",
			"droplet:          b1",
			"stack:            cflinuxfs4",
			"droplet status:   UpgradeHeld: restage to run b2",
			"held droplet:     b2",
			"",
			"type:           web",
			"instances:      1/2",
			"memory:         256M",
			"disk:           1G",
			"health check:   http GET /health, 30s to start",
			"running:        False (CrashLoop): 1 of 2 instances run the current droplet",
			"",
			"INSTANCE   STATE     REASON      RESTARTS   IMAGE",
			"#0         RUNNING   -           0          sha256:0123456789ab",
			"#1         CRASHED   CrashLoop   4          sha256:0123456789ab",
			"",
			"type:           worker",
			"instances:      0/1",
			"memory:         1G",
			"disk:           1G",
			"health check:   process",
			"command:        ./work",
			"running:        cf-hnc has not reported on it yet",
			"",
		}, "\n")))
	})

	It("says when it has no process yet", func() {
		app := &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Name: "g1"}, Spec: cfv1alpha1.CFAppSpec{DisplayName: "web", DesiredState: cfv1alpha1.StoppedState}}
		var out bytes.Buffer
		Expect(writeApp(&out, app, nil)).To(Succeed())
		Expect(out.String()).To(HaveSuffix("droplet:          -\nstack:            -\ndroplet status:   cf-hnc has not reported on it yet\n\n" +
			"No process yet: cf-hnc makes the web process of every app.\n"))
	})
})

var _ = Describe("an app's logs", func() {
	pod := func(processType, name string, labels ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{cfv1alpha1.ProcessTypeLabel: processType}}}
		for i := 0; i+1 < len(labels); i += 2 {
			p.Labels[labels[i]] = labels[i+1]
		}
		return p
	}

	It("name each instance as the cf CLI does, by its process type and index", func() {
		Expect(cf.InstanceSource(pod("web", "g-web-3", "apps.kubernetes.io/pod-index", "0"))).To(Equal("[APP/PROC/WEB/0]"))
		Expect(cf.InstanceSource(pod("worker", "g-worker-12"))).To(Equal("[APP/PROC/WORKER/12]"), "the ordinal in the name, without the label")
	})

	It("read the kubelet's timestamps and show each line with its time and instance", func() {
		lines := cf.ParseLogLines([]byte("2026-12-03T12:00:01.123456789Z staticfile-server: serving . on 0.0.0.0:8080\n"+
			"2026-12-03T12:00:02Z GET / 200 20 1ms\nno time\n"), "[APP/PROC/WEB/0]")
		Expect(lines).To(HaveLen(3))
		Expect(formatLine(lines[0], time.UTC)).To(Equal("2026-12-03T12:00:01.12+0000 [APP/PROC/WEB/0] staticfile-server: serving . on 0.0.0.0:8080"))
		Expect(formatLine(lines[1], time.FixedZone("CET", 3600))).To(Equal("2026-12-03T13:00:02.00+0100 [APP/PROC/WEB/0] GET / 200 20 1ms"))
		Expect(formatLine(lines[2], time.UTC)).To(Equal("2026-12-03T12:00:02.00+0000 [APP/PROC/WEB/0] no time"), "the time of the line before")
	})

	It("say when the instances wrote nothing", func() {
		Expect(nothingWritten(1, "web")).To(Equal(`The 1 instance of app "web" has written nothing yet.`))
		Expect(nothingWritten(3, "web")).To(Equal(`The 3 instances of app "web" have written nothing yet.`))
	})

	It("are named in hints with the target the command was given, quoted for a shell", func() {
		app := &cfv1alpha1.CFApp{Spec: cfv1alpha1.CFAppSpec{DisplayName: "my app"}}
		t := target{space: &cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Name: "space-guid"}}}
		Expect(logsHint(app, &targetFlags{org: "acme", space: "it's dev"}, t)).To(Equal(`kubectl cf logs 'my app' --recent -o acme -s 'it'\''s dev'`))
		app.Spec.DisplayName = "web"
		Expect(logsHint(app, &targetFlags{}, t)).To(Equal("kubectl cf logs web --recent -n space-guid"))
	})
})
