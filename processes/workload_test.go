package processes

import (
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

const dropletImage = "registry.local/org/space/droplets/app-guid@sha256:aaaa"

func webProcess() *cfv1alpha1.CFProcess {
	return &cfv1alpha1.CFProcess{
		ObjectMeta: metav1.ObjectMeta{Namespace: "space-guid", Name: "app-guid-web", UID: "process-uid"},
		Spec: cfv1alpha1.CFProcessSpec{
			AppRef: corev1.LocalObjectReference{Name: "app-guid"}, ProcessType: "web", Instances: 2, MemoryMB: 1024, DiskMB: 512,
			HealthCheck: cfv1alpha1.HealthCheck{Type: cfv1alpha1.PortHealthCheck, TimeoutSeconds: 60},
		},
	}
}

func inSpace() runContext {
	return runContext{
		app: &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: "space-guid", Name: "app-guid"},
			Spec: cfv1alpha1.CFAppSpec{DisplayName: "web-app", DesiredState: cfv1alpha1.StartedState}},
		droplet: &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Name: "build-guid"}, Status: cfv1alpha1.CFBuildStatus{
			Droplet: &cfv1alpha1.BuildDropletStatus{Registry: cfv1alpha1.Registry{Image: dropletImage,
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "cf-registry-org"}}}}}},
		spaceGUID: "space-guid", spaceName: "dev", orgGUID: "org-guid", orgName: "acme",
	}
}

func env(c corev1.Container, name string) corev1.EnvVar {
	for _, e := range c.Env {
		if e.Name == name {
			return e
		}
	}
	Fail("no " + name + " in the environment")
	return corev1.EnvVar{}
}

var _ = Describe("An app's workload", func() {
	It("runs the droplet's process type through the launcher, pulled with the space's credentials", func() {
		set := desiredStatefulSet(webProcess(), inSpace(), 2)
		Expect(*set.Spec.Replicas).To(BeEquivalentTo(2))
		Expect(set.Spec.PodManagementPolicy).To(Equal(appsv1.ParallelPodManagement), "a crashed instance must not hold back the others or a fixed droplet")
		Expect(set.OwnerReferences).To(ConsistOf(HaveField("UID", BeEquivalentTo("process-uid"))))
		pod := set.Spec.Template
		Expect(set.Spec.Selector.MatchLabels).To(Equal(map[string]string{cfv1alpha1.ProcessLabel: "app-guid-web"}))
		Expect(pod.Labels).To(HaveKeyWithValue(cfv1alpha1.ProcessLabel, "app-guid-web"))
		Expect(pod.Labels).To(HaveKeyWithValue(cfv1alpha1.AppLabel, "app-guid"))
		Expect(pod.Annotations).To(HaveKeyWithValue(DropletAnnotation, "build-guid"))
		Expect(pod.Spec.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: "cf-registry-org"}))
		c := pod.Spec.Containers[0]
		Expect(c.Image).To(Equal(dropletImage))
		Expect(c.Command).To(Equal([]string{"/cnb/process/web"}))
		Expect(c.Resources.Limits.Memory().String()).To(Equal("1Gi"))
		Expect(c.Resources.Limits.StorageEphemeral().String()).To(Equal("512Mi"))
		Expect(env(c, "PORT").Value).To(Equal("8080"))
		Expect(env(c, "MEMORY_LIMIT").Value).To(Equal("1024m"))
		Expect(env(c, "CF_INSTANCE_INDEX").ValueFrom.FieldRef.FieldPath).To(Equal("metadata.labels['apps.kubernetes.io/pod-index']"))
		var vcap map[string]any
		Expect(json.Unmarshal([]byte(env(c, "VCAP_APPLICATION").Value), &vcap)).To(Succeed())
		Expect(vcap).To(HaveKeyWithValue("application_name", "web-app"))
		Expect(vcap).To(HaveKeyWithValue("space_name", "dev"))
		Expect(vcap).To(HaveKeyWithValue("organization_name", "acme"))
		Expect(vcap).To(HaveKeyWithValue("limits", map[string]any{"mem": 1024.0, "disk": 512.0}))
	})

	It("runs a start command with the stack's shell, through the launcher", func() {
		p := webProcess()
		p.Spec.Command = "httpd -f -p $PORT"
		c := desiredStatefulSet(p, inSpace(), 1).Spec.Template.Spec.Containers[0]
		Expect(c.Command).To(Equal([]string{"/cnb/lifecycle/launcher", "--", "/bin/sh", "-c", "httpd -f -p $PORT"}), "the stack has no bash for the launcher's shell mode")
	})

	DescribeTable("checks health as the process says",
		func(h cfv1alpha1.HealthCheck, check func(*corev1.Probe)) {
			p := webProcess()
			p.Spec.HealthCheck = h
			c := desiredStatefulSet(p, inSpace(), 1).Spec.Template.Spec.Containers[0]
			for _, probe := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
				check(probe)
			}
		},
		Entry("port: a TCP connection", cfv1alpha1.HealthCheck{Type: cfv1alpha1.PortHealthCheck, TimeoutSeconds: 60}, func(p *corev1.Probe) {
			Expect(p.TCPSocket.Port.IntValue()).To(Equal(8080))
		}),
		Entry("http: a GET of the endpoint", cfv1alpha1.HealthCheck{Type: cfv1alpha1.HTTPHealthCheck, Endpoint: "/health", TimeoutSeconds: 60}, func(p *corev1.Probe) {
			Expect(p.HTTPGet.Path).To(Equal("/health"))
		}),
		Entry("process: none", cfv1alpha1.HealthCheck{Type: cfv1alpha1.ProcessHealthCheck, TimeoutSeconds: 60}, func(p *corev1.Probe) {
			Expect(p).To(BeNil())
		}),
	)

	It("gives the first health check the process's timeout", func() {
		p := webProcess()
		p.Spec.HealthCheck.TimeoutSeconds = 30
		startup := desiredStatefulSet(p, inSpace(), 1).Spec.Template.Spec.Containers[0].StartupProbe
		Expect(startup.PeriodSeconds * startup.FailureThreshold).To(BeEquivalentTo(30))
	})

	It("replaces every instance when a restart is asked for, and only then", func() {
		p := webProcess()
		before := desiredStatefulSet(p, inSpace(), 2).Spec.Template
		Expect(desiredStatefulSet(p, inSpace(), 2).Spec.Template).To(Equal(before), "the same process gives the same pods")
		p.Annotations = map[string]string{cfv1alpha1.RestartedAtAnnotation: "2026-12-05T10:00:00Z"}
		Expect(desiredStatefulSet(p, inSpace(), 2).Spec.Template.Annotations).To(HaveKeyWithValue(cfv1alpha1.RestartedAtAnnotation, "2026-12-05T10:00:00Z"))
	})

	It("replaces every instance when the CF API starts the app, and marks the new ones with that start", func() {
		p := webProcess()
		p.Annotations = map[string]string{cfv1alpha1.AppStartedAtAnnotation: "2026-12-05T11:00:00Z"}
		Expect(desiredStatefulSet(p, inSpace(), 2).Spec.Template.Annotations).To(HaveKeyWithValue(cfv1alpha1.AppStartedAtAnnotation, "2026-12-05T11:00:00Z"))
	})

	// A tenant writes a process's annotations (kubectl annotate): a pod of every instance
	// carries what the template says (review 3, N2).
	DescribeTable("copies a start or restart onto the pods only as a time, in the form the CF API writes it",
		func(value string, copied string) {
			p := webProcess()
			p.Annotations = map[string]string{cfv1alpha1.AppStartedAtAnnotation: value, cfv1alpha1.RestartedAtAnnotation: value}
			annotations := desiredStatefulSet(p, inSpace(), 2).Spec.Template.Annotations
			for _, key := range []string{cfv1alpha1.AppStartedAtAnnotation, cfv1alpha1.RestartedAtAnnotation} {
				if copied == "" {
					Expect(annotations).NotTo(HaveKey(key))
					continue
				}
				Expect(annotations).To(HaveKeyWithValue(key, copied))
			}
		},
		Entry("as the CF API writes it", "2026-12-05T11:00:00.123456789Z", "2026-12-05T11:00:00.123456789Z"),
		Entry("in another zone", "2026-12-05T12:00:00+01:00", "2026-12-05T11:00:00Z"),
		Entry("not a time", "tomorrow", ""),
		Entry("256 KiB", strings.Repeat("x", 256<<10), ""),
		Entry("a time followed by 1 MiB", "2026-12-05T11:00:00Z"+strings.Repeat(" ", 1<<20), ""),
	)

	DescribeTable("requests CPU in proportion to memory, one CPU per 8 GiB, as Cloud Foundry shares it, and limits none",
		func(memoryMB int64, cpu string) {
			p := webProcess()
			p.Spec.MemoryMB = memoryMB
			resources := desiredStatefulSet(p, inSpace(), 1).Spec.Template.Spec.Containers[0].Resources
			Expect(resources.Requests.Cpu().String()).To(Equal(cpu))
			Expect(resources.Limits).NotTo(HaveKey(corev1.ResourceCPU))
		},
		Entry("1 GiB", int64(1024), "125m"),
		Entry("the smallest process", int64(16), "1m"),
		Entry("the largest process", int64(65536), "8"),
	)

	It("meets the restricted Pod Security Standard, with no API token", func() {
		template := desiredStatefulSet(webProcess(), inSpace(), 1).Spec.Template
		evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
		Expect(err).NotTo(HaveOccurred())
		results := evaluator.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &template.ObjectMeta, &template.Spec)
		verdict := policy.AggregateCheckResults(results)
		Expect(verdict.Allowed).To(BeTrue(), verdict.ForbiddenDetail())
		Expect(*template.Spec.AutomountServiceAccountToken).To(BeFalse())
	})
})
