package standinkubelet

import (
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Exit codes of the containers in kpack's build pods.
const (
	// exitFailed is how kpack's build-init, rebase and completion binaries exit on any error,
	// and the lifecycle on one without a code of its own.
	exitFailed = 1
	// exitNoGroupDetected is the lifecycle's exit code when no buildpack group passes detection.
	exitNoGroupDetected = 20
	// exitBuildpackFailed is the lifecycle's exit code when a buildpack fails in /bin/build.
	exitBuildpackFailed = 51
	// exitExportFailed is the lifecycle's exit code when the exporter fails.
	exitExportFailed = 62
)

// Container state reasons as a kubelet writes them.
const (
	reasonCompleted       = "Completed"
	reasonError           = "Error"
	reasonPodInitializing = "PodInitializing"
	reasonErrImagePull    = "ErrImagePull"
)

// outcome is how a pod's containers ended. The zero value of stoppedAt means that every
// container terminated successfully.
type outcome struct {
	// stoppedAt is the container at which the pod stopped: one that failed, or one whose image
	// could not be pulled. The containers after it never start.
	stoppedAt string
	// exitCode is the failed container's exit code; zero when its image could not be pulled.
	exitCode int32
	// message is the failed container's termination message, or the image pull error.
	message string
	// completion is the completion container's termination message when the pod succeeded.
	completion string
}

func succeeded(completion string) outcome {
	return outcome{completion: completion}
}

func failed(container string, exitCode int32, err error) outcome {
	return outcome{stoppedAt: container, exitCode: exitCode, message: err.Error()}
}

func imagePullFailed(container string, err error) outcome {
	return outcome{stoppedAt: container, message: err.Error()}
}

// pending reports whether the pod waits for an image.
func (o outcome) pending() bool {
	return o.stoppedAt != "" && o.exitCode == 0
}

func (o outcome) phase() corev1.PodPhase {
	switch {
	case o.stoppedAt == "":
		return corev1.PodSucceeded
	case o.pending():
		return corev1.PodPending
	default:
		return corev1.PodFailed
	}
}

// podStatus is the status a kubelet reports for the pod after the outcome: init containers and
// containers in order, terminated until the one the pod stopped at, waiting after it. kpack
// reads the phase, the init containers' exit codes and messages, and the completion
// container's termination message.
func podStatus(pod *corev1.Pod, o outcome, now metav1.Time) corev1.PodStatus {
	status := corev1.PodStatus{Phase: o.phase(), StartTime: pod.Status.StartTime}
	if status.StartTime == nil {
		status.StartTime = &now
	}
	stopped := false
	containerStatus := func(c corev1.Container) corev1.ContainerStatus {
		s := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
		switch {
		case stopped:
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: reasonPodInitializing}
		case c.Name == o.stoppedAt && o.pending():
			stopped = true
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: reasonErrImagePull, Message: o.message}
		case c.Name == o.stoppedAt:
			stopped = true
			s.State.Terminated = &corev1.ContainerStateTerminated{
				ExitCode: o.exitCode, Reason: reasonError, Message: o.message, StartedAt: now, FinishedAt: now,
			}
		default:
			s.State.Terminated = &corev1.ContainerStateTerminated{Reason: reasonCompleted, StartedAt: now, FinishedAt: now}
			if c.Name == kpackv1alpha2.CompletionContainerName {
				s.State.Terminated.Message = o.completion
			}
		}
		return s
	}
	for _, c := range pod.Spec.InitContainers {
		status.InitContainerStatuses = append(status.InitContainerStatuses, containerStatus(c))
	}
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, containerStatus(c))
	}
	return status
}

// waitsAlready reports whether a pod already reports the image pull failure of the outcome, so
// that a retry that fails the same way writes nothing.
func waitsAlready(pod *corev1.Pod, o outcome) bool {
	for _, s := range pod.Status.InitContainerStatuses {
		if s.Name == o.stoppedAt {
			return s.State.Waiting != nil && s.State.Waiting.Reason == reasonErrImagePull && s.State.Waiting.Message == o.message
		}
	}
	return false
}
