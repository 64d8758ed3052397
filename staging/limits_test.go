package staging

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// stoppedPod is a build pod whose step build exited with 137, as the kubelet leaves it: the
// pod's reason and message, and the step's reason.
func stoppedPod(reason, message, stepReason string) *corev1.Pod {
	limits := DefaultBuildLimits()
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		ActiveDeadlineSeconds: limits.timeoutSeconds(),
		InitContainers:        []corev1.Container{{Name: "build", Resources: limits.resources()}},
	}}
	pod.Status.Phase, pod.Status.Reason, pod.Status.Message = corev1.PodFailed, reason, message
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "build", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: stepReason, Message: "compiling\n"}}}}
	return pod
}

var _ = Describe("build limits", func() {
	// quantities are a ResourceList as strings, which compare as the apiserver stores them.
	quantities := func(list corev1.ResourceList) map[corev1.ResourceName]string {
		out := map[corev1.ResourceName]string{}
		for name, q := range list {
			out[name] = q.String()
		}
		return out
	}
	limits := func(timeout time.Duration, memory, disk string) BuildLimits {
		l := DefaultBuildLimits()
		l.Timeout, l.Memory, l.Disk = timeout, resource.MustParse(memory), resource.MustParse(disk)
		return l
	}

	It("are on the Image that staging points at the package: the timeout in seconds, the memory and disk of every step", func() {
		in := readyToStage()
		in.limits = limits(90*time.Second, "2Gi", "10Gi")
		build := planStaging(in).image.Spec.Build

		Expect(build.BuildTimeout).To(HaveValue(BeEquivalentTo(90)), "kpack makes it the pod's activeDeadlineSeconds")
		Expect(quantities(build.Resources.Limits)).To(Equal(map[corev1.ResourceName]string{
			corev1.ResourceMemory: "2Gi", corev1.ResourceEphemeralStorage: "10Gi"}))
		Expect(quantities(build.Resources.Requests)).To(Equal(map[corev1.ResourceName]string{
			corev1.ResourceMemory: "128Mi", corev1.ResourceEphemeralStorage: "512Mi"}))
		Expect(build.Resources.Limits).NotTo(HaveKey(corev1.ResourceCPU), "a build may use every idle CPU")
	})

	It("are 15 minutes, 1Gi and 4Gi unless the manager is told otherwise", func() {
		build := planStaging(readyToStage()).image.Spec.Build
		Expect(build.BuildTimeout).To(HaveValue(BeEquivalentTo(900)))
		Expect(quantities(build.Resources.Limits)).To(Equal(map[corev1.ResourceName]string{
			corev1.ResourceMemory: "1Gi", corev1.ResourceEphemeralStorage: "4Gi"}))

		r := NewBuildReconciler(nil, nil, nil, nil, 1)
		Expect(r.limits).To(Equal(DefaultBuildLimits()))
		Expect(r.WithLimits(BuildLimits{}).limits).To(Equal(DefaultBuildLimits()), "the zero value of manager.Config")
		Expect(r.WithLimits(BuildLimits{Timeout: time.Hour}).limits).To(Equal(limits(time.Hour, "1Gi", "4Gi")), "a zero field keeps its default")
	})

	It("round a fraction of a second up, and request no more than a limit below the default request", func() {
		in := readyToStage()
		in.limits = limits(1500*time.Millisecond, "100Mi", "256Mi")
		build := planStaging(in).image.Spec.Build
		Expect(build.BuildTimeout).To(HaveValue(BeEquivalentTo(2)))
		Expect(quantities(build.Resources.Requests)).To(Equal(map[corev1.ResourceName]string{
			corev1.ResourceMemory: "100Mi", corev1.ResourceEphemeralStorage: "256Mi"}), "the apiserver refuses a request above its limit")
	})

	It("are stated as the apiserver returns them, so that an unchanged Image is not written again", func() {
		in := readyToStage()
		in.limits = limits(time.Minute, "1024Mi", "4096Mi")
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(planStaging(in).image)
		Expect(err).NotTo(HaveOccurred())
		Expect(content).To(HaveKeyWithValue("spec", HaveKeyWithValue("build", HaveKeyWithValue("resources", HaveKeyWithValue("limits",
			Equal(map[string]any{"memory": "1Gi", "ephemeral-storage": "4Gi"}))))))
	})

	DescribeTable("are named when one stops a step, before the end of its log",
		func(pod *corev1.Pod, message string) {
			_, got := failure(&kpackv1alpha2.Build{ObjectMeta: metav1.ObjectMeta{Name: "app-build-1"}}, failedStepOf(pod))
			Expect(got).To(Equal("kpack build app-build-1 failed in step build (exit code 137): " + message))
		},
		Entry("the timeout", stoppedPod("DeadlineExceeded", "Pod was active on the node longer than the specified deadline", "Error"),
			"the build ran longer than its timeout of 15m0s; compiling"),
		Entry("the disk limit", stoppedPod("Evicted", "Pod ephemeral local storage usage exceeds the total limit of containers 4Gi.", "Error"),
			"Evicted: Pod ephemeral local storage usage exceeds the total limit of containers 4Gi.; compiling"),
		Entry("the memory limit", stoppedPod("", "", "OOMKilled"),
			"OOMKilled: the step needed more than its memory limit of 1Gi; compiling"),
		Entry("none: the step failed on its own", stoppedPod("", "", "Error"), "compiling"),
	)

	DescribeTable("refuse what cannot bound a build",
		func(change func(*BuildLimits), message string) {
			l := DefaultBuildLimits()
			change(&l)
			if message == "" {
				Expect(l.Validate()).To(Succeed())
				return
			}
			Expect(l.Validate()).To(MatchError(ContainSubstring(message)))
		},
		Entry("the defaults", func(*BuildLimits) {}, ""),
		Entry("a limit below the default request", func(l *BuildLimits) { l.Memory = resource.MustParse("64Mi") }, ""),
		Entry("no timeout", func(l *BuildLimits) { l.Timeout = 0 }, "build timeout 0s: must be at least 1s"),
		Entry("a timeout under a second", func(l *BuildLimits) { l.Timeout = 500 * time.Millisecond }, "build timeout 500ms: must be at least 1s"),
		Entry("a negative timeout", func(l *BuildLimits) { l.Timeout = -time.Minute }, "must be at least 1s"),
		Entry("no memory", func(l *BuildLimits) { l.Memory = resource.Quantity{} }, "build memory limit 0: must be positive"),
		Entry("negative disk", func(l *BuildLimits) { l.Disk = resource.MustParse("-1Gi") }, "build disk limit -1Gi: must be positive"),
		Entry("a negative request", func(l *BuildLimits) { l.DiskRequest = resource.MustParse("-1") }, "build disk request -1: must not be negative"),
	)
})
