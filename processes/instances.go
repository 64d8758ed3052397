package processes

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// notRunningReasons orders the reasons an instance is not running by what an app developer
// must see first: the Running condition gives the first that any instance has.
var notRunningReasons = []string{
	cfv1alpha1.ImagePullFailedReason,
	cfv1alpha1.OutOfMemoryReason,
	cfv1alpha1.CrashLoopReason,
	cfv1alpha1.QuotaExceededReason,
	cfv1alpha1.UnschedulableReason,
	cfv1alpha1.StartingReason,
}

// instanceOf is what a pod says of the instance it runs, and what the instance was made for: the
// droplet and the app's start through the CF API, from the annotations of the template it was
// made from. A pod being deleted is no instance: it is stopping, replaced or scaled away.
func instanceOf(pod *corev1.Pod) (cfv1alpha1.InstanceStatus, bool) {
	if pod.DeletionTimestamp != nil {
		return cfv1alpha1.InstanceStatus{}, false
	}
	index, err := strconv.ParseInt(pod.Labels[podIndexLabel], 10, 32)
	if err != nil {
		return cfv1alpha1.InstanceStatus{}, false
	}
	instance := cfv1alpha1.InstanceStatus{Index: int32(index), State: cfv1alpha1.InstanceStarting, Reason: cfv1alpha1.StartingReason,
		Droplet: pod.Annotations[DropletAnnotation], AppStartedAt: pod.Annotations[cfv1alpha1.AppStartedAtAnnotation]}
	if len(pod.Spec.Containers) > 0 {
		instance.Image = pod.Spec.Containers[0].Image
	}
	container := containerStatus(pod)
	if container != nil {
		instance.Restarts = container.RestartCount
	}
	switch {
	case unschedulable(pod):
		instance.State, instance.Reason = cfv1alpha1.InstanceDown, cfv1alpha1.UnschedulableReason
	case container == nil:
	case container.State.Waiting != nil && pullFailure(container.State.Waiting.Reason):
		instance.State, instance.Reason = cfv1alpha1.InstanceDown, cfv1alpha1.ImagePullFailedReason
	case container.Ready:
		instance.State, instance.Reason = cfv1alpha1.InstanceRunning, ""
	case container.State.Terminated != nil || (container.State.Waiting != nil && container.State.Waiting.Reason == "CrashLoopBackOff"):
		instance.State, instance.Reason = cfv1alpha1.InstanceCrashed, crashReason(container)
	}
	return instance, true
}

func containerStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == containerName {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// pullFailure says whether a container waits because its image cannot be pulled.
func pullFailure(reason string) bool {
	return reason == "ErrImagePull" || reason == "ImagePullBackOff" || reason == "InvalidImageName"
}

// crashReason is why a container crashed: out of memory when the kernel killed its last run
// for its memory limit.
func crashReason(c *corev1.ContainerStatus) string {
	for _, t := range []*corev1.ContainerStateTerminated{c.State.Terminated, c.LastTerminationState.Terminated} {
		if t != nil && t.Reason == "OOMKilled" {
			return cfv1alpha1.OutOfMemoryReason
		}
	}
	return cfv1alpha1.CrashLoopReason
}

// instancesStatus sets the instances of a process, and its Running condition, from its pods:
// desired instances should run the droplet image; zero desired for a stopped app or one
// without a droplet (why, as reason and message, when so). overQuota, when not empty, says
// which quota leaves no room for the desired instances that have no pod: they are DOWN, and
// are to be made for the process's droplet and its app's latest start, as its template says.
func instancesStatus(p *cfv1alpha1.CFProcess, pods []corev1.Pod, desired int32, image string, why, whyMessage, overQuota string) metav1.Condition {
	var instances []cfv1alpha1.InstanceStatus
	for i := range pods {
		if instance, ok := instanceOf(&pods[i]); ok {
			instances = append(instances, instance)
		}
	}
	if overQuota != "" {
		for index := range desired {
			if !slices.ContainsFunc(instances, func(i cfv1alpha1.InstanceStatus) bool { return i.Index == index }) {
				instances = append(instances, cfv1alpha1.InstanceStatus{Index: index, State: cfv1alpha1.InstanceDown, Reason: cfv1alpha1.QuotaExceededReason,
					Droplet: p.Status.Droplet, AppStartedAt: cfv1alpha1.CanonicalTime(p.Annotations[cfv1alpha1.AppStartedAtAnnotation])})
			}
		}
		overQuota = "; " + overQuota
	}
	slices.SortFunc(instances, func(a, b cfv1alpha1.InstanceStatus) int { return cmp.Compare(a.Index, b.Index) })
	p.Status.Instances = instances
	p.Status.DesiredInstances = desired
	p.Status.RunningInstances, p.Status.CrashedInstances = 0, 0
	current := int32(0)
	for _, instance := range instances {
		switch instance.State {
		case cfv1alpha1.InstanceRunning:
			p.Status.RunningInstances++
			if instance.Image == image {
				current++
			}
		case cfv1alpha1.InstanceCrashed:
			p.Status.CrashedInstances++
		}
	}
	if why != "" {
		return metav1.Condition{Type: cfv1alpha1.RunningCondition, Status: metav1.ConditionFalse, Reason: why, Message: whyMessage}
	}
	if current == desired && len(instances) == int(desired) {
		return metav1.Condition{Type: cfv1alpha1.RunningCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.InstancesRunningReason,
			Message: fmt.Sprintf("%d of %d instances run the current droplet", current, desired)}
	}
	return metav1.Condition{Type: cfv1alpha1.RunningCondition, Status: metav1.ConditionFalse, Reason: firstReason(instances),
		Message: fmt.Sprintf("%d of %d instances run the current droplet%s%s", current, desired, problems(instances), overQuota)}
}

// firstReason is the first of notRunningReasons that an instance has; Starting while instances
// are still to be made, scaled away or rolled to the droplet.
func firstReason(instances []cfv1alpha1.InstanceStatus) string {
	for _, reason := range notRunningReasons {
		if slices.ContainsFunc(instances, func(i cfv1alpha1.InstanceStatus) bool { return i.Reason == reason }) {
			return reason
		}
	}
	return cfv1alpha1.StartingReason
}

// problems names the instances that are crashed or down, with why.
func problems(instances []cfv1alpha1.InstanceStatus) string {
	var named []string
	for _, i := range instances {
		if i.State == cfv1alpha1.InstanceCrashed || i.State == cfv1alpha1.InstanceDown {
			named = append(named, fmt.Sprintf("instance %d %s (%s)", i.Index, i.State, i.Reason))
		}
	}
	if len(named) == 0 {
		return ""
	}
	return "; " + strings.Join(named, ", ")
}
