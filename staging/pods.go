package staging

import (
	"slices"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// BuildPodSelector selects the pods that kpack makes for Builds.
var BuildPodSelector = func() labels.Selector {
	hasBuild, err := labels.NewRequirement(kpackv1alpha2.BuildLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*hasBuild)
}()

// TrimBuildPod keeps of a cached build pod what the rollout and the build reconciler read: its
// metadata but the managed fields, its scheduling gates, its phase, and why it cannot be
// scheduled if it cannot (the node is full, or under disk pressure). A build pod is mostly its
// containers (kpack's lifecycle steps with their environment), and kpack keeps the pods of every
// Build in an Image's history: cached whole, they would grow the manager with every push and
// rebuild.
func TrimBuildPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	trimmed := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: pod.ObjectMeta,
		Spec:   corev1.PodSpec{SchedulingGates: pod.Spec.SchedulingGates},
		Status: corev1.PodStatus{Phase: pod.Status.Phase}}
	if c := unscheduled(pod); c != nil {
		trimmed.Status.Conditions = []corev1.PodCondition{*c}
	}
	trimmed.ManagedFields = nil
	return trimmed, nil
}

// unscheduled is the condition that says why the scheduler could not place a pod, nil if it
// did or has not tried.
func unscheduled(pod *corev1.Pod) *corev1.PodCondition {
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// failedStepOf is the first step of a build pod that exited with an error, in the pod's
// order, nil if there is none.
func failedStepOf(pod *corev1.Pod) *failedStep {
	for _, s := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			return &failedStep{name: s.Name, exitCode: t.ExitCode, stopped: stoppedBy(pod, s.Name, t), log: t.Message}
		}
	}
	return nil
}
