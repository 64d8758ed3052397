package cf_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
)

var _ = Describe("a process change", func() {
	web := func() cfv1alpha1.CFProcessSpec {
		return cfv1alpha1.CFProcessSpec{ProcessType: "web", Instances: 1, MemoryMB: 1024, DiskMB: 1024,
			HealthCheck: cfv1alpha1.HealthCheck{Type: cfv1alpha1.PortHealthCheck, TimeoutSeconds: 60}}
	}

	// The CF API's copy of the rule set a process's command and health-check timeout (from a
	// manifest), kubectl cf's did not (its flags set neither): the one rule sets every field
	// that a change names, for both.
	DescribeTable("sets what it names, and says whether anything changed",
		func(change cf.ProcessChange, changed bool, want func(*cfv1alpha1.CFProcessSpec)) {
			spec, expected := web(), web()
			want(&expected)
			Expect(change.Apply(&spec)).To(Equal(changed))
			Expect(spec).To(Equal(expected))
		},
		Entry("nothing", cf.ProcessChange{}, false, func(*cfv1alpha1.CFProcessSpec) {}),
		Entry("the same values", cf.ProcessChange{Instances: ptr.To[int32](1), MemoryMB: ptr.To[int64](1024)}, false, func(*cfv1alpha1.CFProcessSpec) {}),
		Entry("a scale", cf.ProcessChange{Instances: ptr.To[int32](3), DiskMB: ptr.To[int64](256)}, true,
			func(s *cfv1alpha1.CFProcessSpec) { s.Instances, s.DiskMB = 3, 256 }),
		Entry("a command", cf.ProcessChange{Command: ptr.To("./serve --port $PORT")}, true,
			func(s *cfv1alpha1.CFProcessSpec) { s.Command = "./serve --port $PORT" }),
		Entry("a health-check timeout", cf.ProcessChange{Timeout: ptr.To[int32](180)}, true,
			func(s *cfv1alpha1.CFProcessSpec) { s.HealthCheck.TimeoutSeconds = 180 }),
		Entry("an http check, which gets / without an endpoint", cf.ProcessChange{HealthCheck: ptr.To(cfv1alpha1.HTTPHealthCheck)}, true,
			func(s *cfv1alpha1.CFProcessSpec) {
				s.HealthCheck.Type, s.HealthCheck.Endpoint = cfv1alpha1.HTTPHealthCheck, "/"
			}),
		Entry("an endpoint of a check that has none", cf.ProcessChange{Endpoint: ptr.To("/health")}, false, func(*cfv1alpha1.CFProcessSpec) {}),
	)

	It("changes the limits only when memory, disk or the health check change, which replaces the instances", func() {
		Expect(cf.ProcessChange{Instances: ptr.To[int32](2)}.LimitsChange()).To(BeFalse())
		Expect(cf.ProcessChange{MemoryMB: ptr.To[int64](256)}.LimitsChange()).To(BeTrue())
		Expect(cf.ProcessChange{}.Empty()).To(BeTrue())
	})
})

var _ = Describe("a lifecycle change", func() {
	DescribeTable("sets the buildpacks and the stack it names; default alone goes back to the space's default Builder",
		func(change cf.LifecycleChange, before, after cfv1alpha1.LifecycleData, changed bool) {
			Expect(change.Apply(&before)).To(Equal(changed))
			Expect(before).To(Equal(after))
		},
		Entry("nothing", cf.LifecycleChange{}, cfv1alpha1.LifecycleData{Buildpacks: []string{"go"}}, cfv1alpha1.LifecycleData{Buildpacks: []string{"go"}}, false),
		Entry("buildpacks", cf.LifecycleChange{Buildpacks: &[]string{"go", "procfile"}}, cfv1alpha1.LifecycleData{},
			cfv1alpha1.LifecycleData{Buildpacks: []string{"go", "procfile"}}, true),
		Entry("default", cf.LifecycleChange{Buildpacks: &[]string{"default"}}, cfv1alpha1.LifecycleData{Buildpacks: []string{"go"}}, cfv1alpha1.LifecycleData{}, true),
		Entry("null among others", cf.LifecycleChange{Buildpacks: &[]string{"null", "go"}}, cfv1alpha1.LifecycleData{}, cfv1alpha1.LifecycleData{Buildpacks: []string{"go"}}, true),
		Entry("a stack", cf.LifecycleChange{Stack: ptr.To("jammy")}, cfv1alpha1.LifecycleData{}, cfv1alpha1.LifecycleData{Stack: "jammy"}, true),
	)

	It("refuses a lifecycle other than buildpacks", func() {
		Expect(cf.CheckLifecycleType("cnb")).To(Succeed())
		Expect(cf.CheckLifecycleType("docker")).To(MatchError(`cf-hnc stages apps with buildpacks only: lifecycle "docker" is not supported`))
	})
})

var _ = Describe("a process's instances since its app's start", func() {
	const droplet, started = "droplet", "2026-12-08T01:00:00Z"
	process := func(instances ...cfv1alpha1.InstanceStatus) *cfv1alpha1.CFProcess {
		p := &cfv1alpha1.CFProcess{Spec: cfv1alpha1.CFProcessSpec{Instances: 2}, Status: cfv1alpha1.CFProcessStatus{Instances: instances}}
		p.Annotations = map[string]string{cfv1alpha1.AppStartedAtAnnotation: started}
		return p
	}

	It("are one per index, DOWN until reported, and STARTING while one made before the start is replaced", func() {
		p := process(
			cfv1alpha1.InstanceStatus{Index: 0, State: cfv1alpha1.InstanceRunning, Droplet: droplet, AppStartedAt: started},
			cfv1alpha1.InstanceStatus{Index: 1, State: cfv1alpha1.InstanceRunning, Droplet: droplet, AppStartedAt: "before"})
		Expect(cf.Instances(p, droplet)).To(HaveExactElements(
			HaveField("State", cfv1alpha1.InstanceRunning), And(HaveField("Index", BeEquivalentTo(1)), HaveField("State", cfv1alpha1.InstanceStarting))))
		Expect(cf.Instances(process(), droplet)).To(HaveEach(HaveField("State", cfv1alpha1.InstanceDown)))
		Expect(cf.Instances(p, "")).To(HaveEach(HaveField("State", cfv1alpha1.InstanceDown)), "a process that runs no droplet")
	})

	It("run the droplet of the app as it is now, or the status's without a readable app", func() {
		p := process()
		p.Status.Droplet = "reported"
		app := &cfv1alpha1.CFApp{Spec: cfv1alpha1.CFAppSpec{DesiredState: cfv1alpha1.StartedState, CurrentDropletRef: corev1.LocalObjectReference{Name: droplet}}}
		Expect(cf.RunningDroplet(p, app)).To(Equal(droplet))
		app.Spec.DesiredState = cfv1alpha1.StoppedState
		Expect(cf.RunningDroplet(p, app)).To(BeEmpty())
		Expect(cf.RunningDroplet(p, nil)).To(Equal("reported"))
	})
})
