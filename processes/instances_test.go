package processes

import (
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// instancePod is the pod of instance index running image, whose container is in state.
func instancePod(index int, image string, ready bool, state corev1.ContainerState) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app-guid-web-" + strconv.Itoa(index), Labels: map[string]string{podIndexLabel: strconv.Itoa(index)}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: containerName, Image: image}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: containerName, Ready: ready, State: state, RestartCount: 2,
		}}},
	}
}

var (
	running = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting = func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
)

var _ = Describe("An app's instances", func() {
	DescribeTable("are in the state Cloud Foundry names",
		func(pod corev1.Pod, state cfv1alpha1.InstanceState, reason string) {
			instance, ok := instanceOf(&pod)
			Expect(ok).To(BeTrue())
			Expect(instance.State).To(Equal(state))
			Expect(instance.Reason).To(Equal(reason))
			if len(pod.Status.ContainerStatuses) > 0 {
				Expect(instance.Restarts).To(BeEquivalentTo(2), "the platform's restarts are counted")
			}
		},
		Entry("ready: RUNNING", instancePod(0, dropletImage, true, running), cfv1alpha1.InstanceRunning, ""),
		Entry("started, not yet healthy: STARTING", instancePod(0, dropletImage, false, running), cfv1alpha1.InstanceStarting, cfv1alpha1.StartingReason),
		Entry("waiting to be restarted: CRASHED", instancePod(0, dropletImage, false, waiting("CrashLoopBackOff")), cfv1alpha1.InstanceCrashed, cfv1alpha1.CrashLoopReason),
		Entry("droplet not pulled: DOWN", instancePod(0, dropletImage, false, waiting("ImagePullBackOff")), cfv1alpha1.InstanceDown, cfv1alpha1.ImagePullFailedReason),
		Entry("droplet not pulled yet, first try: DOWN", instancePod(0, dropletImage, false, waiting("ErrImagePull")), cfv1alpha1.InstanceDown, cfv1alpha1.ImagePullFailedReason),
		Entry("killed for its memory: CRASHED, OutOfMemory", func() corev1.Pod {
			pod := instancePod(0, dropletImage, false, waiting("CrashLoopBackOff"))
			pod.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}
			return pod
		}(), cfv1alpha1.InstanceCrashed, cfv1alpha1.OutOfMemoryReason),
		Entry("no room on any node: DOWN", func() corev1.Pod {
			pod := instancePod(0, dropletImage, false, running)
			pod.Status.ContainerStatuses = nil
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
			return pod
		}(), cfv1alpha1.InstanceDown, cfv1alpha1.UnschedulableReason),
	)

	It("leaves out a pod being deleted", func() {
		pod := instancePod(0, dropletImage, true, running)
		pod.DeletionTimestamp = &metav1.Time{}
		_, ok := instanceOf(&pod)
		Expect(ok).To(BeFalse())
	})

	It("are running when every desired instance runs the current droplet, by index", func() {
		p := webProcess()
		pods := []corev1.Pod{instancePod(1, dropletImage, true, running), instancePod(0, dropletImage, true, running)}
		condition := instancesStatus(p, pods, 2, dropletImage, "", "")
		Expect(condition.Status).To(Equal(metav1.ConditionTrue))
		Expect(condition.Reason).To(Equal(cfv1alpha1.InstancesRunningReason))
		Expect(p.Status.Instances).To(HaveLen(2))
		Expect(p.Status.Instances[0].Index).To(BeEquivalentTo(0))
		Expect(p.Status.RunningInstances).To(BeEquivalentTo(2))
	})

	It("are not running while an instance still runs the old droplet (a rollout)", func() {
		p := webProcess()
		pods := []corev1.Pod{instancePod(0, "old@sha256:bbbb", true, running), instancePod(1, dropletImage, true, running)}
		condition := instancesStatus(p, pods, 2, dropletImage, "", "")
		Expect(condition.Status).To(Equal(metav1.ConditionFalse))
		Expect(condition.Reason).To(Equal(cfv1alpha1.StartingReason))
		Expect(condition.Message).To(HavePrefix("1 of 2 instances run the current droplet"))
		Expect(p.Status.RunningInstances).To(BeEquivalentTo(2), "both answer")
	})

	It("say first the reason a developer must act on", func() {
		p := webProcess()
		pods := []corev1.Pod{instancePod(0, dropletImage, false, waiting("CrashLoopBackOff")), instancePod(1, dropletImage, false, running)}
		condition := instancesStatus(p, pods, 2, dropletImage, "", "")
		Expect(condition.Reason).To(Equal(cfv1alpha1.CrashLoopReason))
		Expect(condition.Message).To(ContainSubstring("instance 0 CRASHED (CrashLoop)"))
		Expect(p.Status.CrashedInstances).To(BeEquivalentTo(1))
	})

	It("say why none is desired: a stopped app", func() {
		p := webProcess()
		condition := instancesStatus(p, nil, 0, dropletImage, cfv1alpha1.AppStoppedReason, "the app is stopped")
		Expect(condition.Status).To(Equal(metav1.ConditionFalse))
		Expect(condition.Reason).To(Equal(cfv1alpha1.AppStoppedReason))
		Expect(p.Status.DesiredInstances).To(BeZero())
	})
})

var _ = Describe("A cached instance pod", func() {
	It("keeps what the status reads, and not the environment", func() {
		pod := instancePod(0, dropletImage, false, waiting("CrashLoopBackOff"))
		pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VCAP_APPLICATION", Value: "{}"}}
		pod.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled", Message: "long"}
		trimmed := TrimInstancePod(&pod)
		Expect(trimmed.Spec.Containers[0].Env).To(BeEmpty())
		before, _ := instanceOf(&pod)
		after, _ := instanceOf(trimmed)
		Expect(after).To(Equal(before))
	})
})
