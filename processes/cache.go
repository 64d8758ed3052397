package processes

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// AppSelector selects what runs or builds for an app: its kpack Image, kpack's Builds and
// build pods (kpack copies the app label of the Image onto them), and the StatefulSets and pods
// of its instances. The manager caches only those, and of those outside CF's tree, which
// anybody may label, only their names (the manager's cache options).
var AppSelector = func() labels.Selector {
	hasApp, err := labels.NewRequirement(cfv1alpha1.AppLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*hasApp)
}()

// IsInstance says whether a pod runs an instance of an app (and is not a build pod).
func IsInstance(pod *corev1.Pod) bool {
	_, ok := pod.Labels[cfv1alpha1.ProcessLabel]
	return ok
}

// TrimInstancePod keeps of a cached instance pod what its process's status reads: its
// metadata but the managed fields, its container's name and image, whether it could be
// scheduled, and its container's state. The rest (environment, probes, volumes) would grow the
// manager with every instance of every app.
func TrimInstancePod(pod *corev1.Pod) *corev1.Pod {
	trimmed := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: pod.ObjectMeta,
		Status: corev1.PodStatus{Phase: pod.Status.Phase}}
	trimmed.ManagedFields = nil
	for _, c := range pod.Spec.Containers {
		trimmed.Spec.Containers = append(trimmed.Spec.Containers, corev1.Container{Name: c.Name, Image: c.Image})
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			trimmed.Status.Conditions = append(trimmed.Status.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
		}
	}
	for _, c := range pod.Status.ContainerStatuses {
		trimmed.Status.ContainerStatuses = append(trimmed.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Ready: c.Ready, RestartCount: c.RestartCount, State: trimState(c.State), LastTerminationState: trimState(c.LastTerminationState)})
	}
	return trimmed
}

// trimState keeps of a container state its kind and reason, and an exit code.
func trimState(s corev1.ContainerState) corev1.ContainerState {
	switch {
	case s.Waiting != nil:
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: s.Waiting.Reason}}
	case s.Terminated != nil:
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: s.Terminated.Reason, ExitCode: s.Terminated.ExitCode}}
	case s.Running != nil:
		return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	}
	return s
}
