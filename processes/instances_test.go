package processes

import (
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// appStartedAt is when the CF API started the app whose instances instancePod makes.
const appStartedAt = "2026-12-05T11:00:00Z"

// instancePod is the pod of instance index running image, whose container is in state. It was
// made from a template of droplet build-guid and of the app's start at appStartedAt.
func instancePod(index int, image string, ready bool, state corev1.ContainerState) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "app-guid-web-" + strconv.Itoa(index),
			Labels:      map[string]string{podIndexLabel: strconv.Itoa(index)},
			Annotations: map[string]string{DropletAnnotation: "build-guid", cfv1alpha1.AppStartedAtAnnotation: appStartedAt},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: containerName, Image: image}}},
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

	It("say which droplet and which start of the app (through the CF API) each was made for", func() {
		pod := instancePod(0, dropletImage, true, running)
		instance, _ := instanceOf(&pod)
		Expect(instance.Droplet).To(Equal("build-guid"))
		Expect(instance.AppStartedAt).To(Equal(appStartedAt))

		older := instancePod(1, dropletImage, true, running)
		delete(older.Annotations, cfv1alpha1.AppStartedAtAnnotation)
		instance, _ = instanceOf(&older)
		Expect(instance.AppStartedAt).To(BeEmpty(), "an instance made before the CF API ever started the app")
	})

	It("leaves out a pod being deleted", func() {
		pod := instancePod(0, dropletImage, true, running)
		pod.DeletionTimestamp = &metav1.Time{}
		_, ok := instanceOf(&pod)
		Expect(ok).To(BeFalse())
	})

	It("are running when every desired instance runs the current droplet, by index", func() {
		p := webProcess()
		pods := []corev1.Pod{instancePod(1, dropletImage, true, running), instancePod(0, dropletImage, true, running)}
		condition := instancesStatus(p, pods, 2, dropletImage, "", "", "")
		Expect(condition.Status).To(Equal(metav1.ConditionTrue))
		Expect(condition.Reason).To(Equal(cfv1alpha1.InstancesRunningReason))
		Expect(p.Status.Instances).To(HaveLen(2))
		Expect(p.Status.Instances[0].Index).To(BeEquivalentTo(0))
		Expect(p.Status.RunningInstances).To(BeEquivalentTo(2))
	})

	It("are not running while an instance still runs the old droplet (a rollout)", func() {
		p := webProcess()
		pods := []corev1.Pod{instancePod(0, "old@sha256:bbbb", true, running), instancePod(1, dropletImage, true, running)}
		condition := instancesStatus(p, pods, 2, dropletImage, "", "", "")
		Expect(condition.Status).To(Equal(metav1.ConditionFalse))
		Expect(condition.Reason).To(Equal(cfv1alpha1.StartingReason))
		Expect(condition.Message).To(HavePrefix("1 of 2 instances run the current droplet"))
		Expect(p.Status.RunningInstances).To(BeEquivalentTo(2), "both answer")
	})

	It("say first the reason a developer must act on", func() {
		p := webProcess()
		pods := []corev1.Pod{instancePod(0, dropletImage, false, waiting("CrashLoopBackOff")), instancePod(1, dropletImage, false, running)}
		condition := instancesStatus(p, pods, 2, dropletImage, "", "", "")
		Expect(condition.Reason).To(Equal(cfv1alpha1.CrashLoopReason))
		Expect(condition.Message).To(ContainSubstring("instance 0 CRASHED (CrashLoop)"))
		Expect(p.Status.CrashedInstances).To(BeEquivalentTo(1))
	})

	It("name the quota that keeps an instance from being made, as DOWN", func() {
		p := webProcess()
		pods := []corev1.Pod{instancePod(0, dropletImage, true, running), instancePod(1, dropletImage, true, running)}
		condition := instancesStatus(p, pods, 3, dropletImage, "", "", "ResourceQuota cf-space-quota allows limits.memory 1280Mi")
		Expect(condition.Reason).To(Equal(cfv1alpha1.QuotaExceededReason))
		Expect(condition.Message).To(Equal("2 of 3 instances run the current droplet; instance 2 DOWN (QuotaExceeded); ResourceQuota cf-space-quota allows limits.memory 1280Mi"))
		Expect(p.Status.Instances).To(HaveLen(3))
		Expect(p.Status.Instances[2]).To(And(HaveField("Index", BeEquivalentTo(2)), HaveField("State", cfv1alpha1.InstanceDown)))
	})

	It("give an instance that the quota keeps from being made the droplet and the start of the template it is to be made from", func() {
		p := webProcess()
		p.Annotations = map[string]string{cfv1alpha1.AppStartedAtAnnotation: appStartedAt}
		p.Status.Droplet = "build-guid"
		instancesStatus(p, []corev1.Pod{instancePod(0, dropletImage, true, running)}, 2, dropletImage, "", "", "ResourceQuota cf-space-quota allows pods 1")
		Expect(p.Status.Instances).To(HaveExactElements(
			And(HaveField("Index", BeEquivalentTo(0)), HaveField("Droplet", "build-guid"), HaveField("AppStartedAt", appStartedAt)),
			And(HaveField("Index", BeEquivalentTo(1)), HaveField("State", cfv1alpha1.InstanceDown), HaveField("Droplet", "build-guid"), HaveField("AppStartedAt", appStartedAt)),
		))
	})

	It("say why none is desired: a stopped app", func() {
		p := webProcess()
		condition := instancesStatus(p, nil, 0, dropletImage, cfv1alpha1.AppStoppedReason, "the app is stopped", "")
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

var _ = Describe("The room a space's quotas leave for one more instance", func() {
	quota := func(name string, hard, used corev1.ResourceList) corev1.ResourceQuota {
		return corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
	}
	p := webProcess()
	p.Spec.MemoryMB, p.Spec.DiskMB = 512, 1024

	It("is none when a quota would pass its memory, pods or disk, naming it", func() {
		Expect(quotaShortfall([]corev1.ResourceQuota{
			quota("roomy", corev1.ResourceList{"pods": resource.MustParse("10")}, corev1.ResourceList{"pods": resource.MustParse("2")}),
			quota("cf-space-quota", corev1.ResourceList{"limits.memory": resource.MustParse("1280Mi"), "count/secrets": resource.MustParse("1")},
				corev1.ResourceList{"limits.memory": resource.MustParse("1Gi"), "count/secrets": resource.MustParse("1")}),
		}, instanceNeeds(p))).To(Equal("ResourceQuota cf-space-quota allows limits.memory 1280Mi, 1Gi is used, and an instance needs 512Mi"))
		Expect(quotaShortfall([]corev1.ResourceQuota{
			quota("pods", corev1.ResourceList{"count/pods": resource.MustParse("2")}, corev1.ResourceList{"count/pods": resource.MustParse("2")}),
		}, instanceNeeds(p))).To(ContainSubstring("ResourceQuota pods allows count/pods 2"))
		Expect(quotaShortfall([]corev1.ResourceQuota{
			quota("disk", corev1.ResourceList{"requests.ephemeral-storage": resource.MustParse("2Gi")}, corev1.ResourceList{"requests.ephemeral-storage": resource.MustParse("1.5Gi")}),
		}, instanceNeeds(p))).To(ContainSubstring("ResourceQuota disk allows requests.ephemeral-storage 2Gi"))
	})

	It("is there when the instance fits exactly, the quota counts nothing an instance needs, or its usage is not counted yet", func() {
		Expect(quotaShortfall([]corev1.ResourceQuota{
			quota("exact", corev1.ResourceList{"requests.memory": resource.MustParse("1536Mi")}, corev1.ResourceList{"requests.memory": resource.MustParse("1Gi")}),
			quota("secrets", corev1.ResourceList{"count/secrets": resource.MustParse("1")}, corev1.ResourceList{"count/secrets": resource.MustParse("1")}),
			quota("new", corev1.ResourceList{"pods": resource.MustParse("0")}, nil),
		}, instanceNeeds(p))).To(BeEmpty())
	})
})
