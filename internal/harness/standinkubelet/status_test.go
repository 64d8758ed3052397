package standinkubelet

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ = Describe("podStatus", func() {
	var (
		build *kpackv1alpha2.Build
		pod   *corev1.Pod
		now   = metav1.Now()
	)
	BeforeEach(func() {
		build = kpackBuild("space", "127.0.0.1:5000/apps/app", "127.0.0.1:5000/sources/app")
		pod = podFor(build, "127.0.0.1:5000/builder@sha256:b", "127.0.0.1:5000/run@sha256:r")
	})

	type state struct {
		name     string
		exitCode int32
		waiting  string
		message  string
	}
	states := func(statuses []corev1.ContainerStatus) []state {
		var result []state
		for _, s := range statuses {
			switch {
			case s.State.Terminated != nil:
				result = append(result, state{name: s.Name, exitCode: s.State.Terminated.ExitCode, message: s.State.Terminated.Message})
			case s.State.Waiting != nil:
				result = append(result, state{name: s.Name, waiting: s.State.Waiting.Reason, message: s.State.Waiting.Message})
			}
		}
		return result
	}

	It("terminates every container successfully, the completion container with kpack's message", func() {
		status := podStatus(pod, succeeded("H4sI"), now)

		Expect(status.Phase).To(Equal(corev1.PodSucceeded))
		Expect(states(status.InitContainerStatuses)).To(Equal([]state{
			{name: "prepare"}, {name: "analyze"}, {name: "detect"}, {name: "restore"}, {name: "build"}, {name: "export"},
		}))
		Expect(states(status.ContainerStatuses)).To(Equal([]state{{name: "completion", message: "H4sI"}}))
		pod.Status = status
		Expect(build.MetadataReady(pod)).To(BeTrue(), "kpack reads the build metadata of this pod")
	})

	It("fails the pod at a step, which kpack reports with the step's message", func() {
		status := podStatus(pod, failed("build", exitBuildpackFailed, errors.New("bundler failed")), now)

		Expect(status.Phase).To(Equal(corev1.PodFailed))
		Expect(states(status.InitContainerStatuses)).To(Equal([]state{
			{name: "prepare"}, {name: "analyze"}, {name: "detect"}, {name: "restore"},
			{name: "build", exitCode: 51, message: "bundler failed"},
			{name: "export", waiting: "PodInitializing"},
		}))
		Expect(states(status.ContainerStatuses)).To(Equal([]state{{name: "completion", waiting: "PodInitializing"}}))
		pod.Status = status
		Expect(build.MetadataReady(pod)).To(BeFalse())
	})

	It("fails the pod in the completion container after every step succeeded", func() {
		status := podStatus(pod, failed("completion", exitFailed, errors.New("no stack")), now)

		Expect(status.Phase).To(Equal(corev1.PodFailed))
		Expect(states(status.InitContainerStatuses)).To(Equal([]state{
			{name: "prepare"}, {name: "analyze"}, {name: "detect"}, {name: "restore"}, {name: "build"}, {name: "export"},
		}))
		Expect(states(status.ContainerStatuses)).To(Equal([]state{{name: "completion", exitCode: 1, message: "no stack"}}))
	})

	It("leaves the pod pending at a container whose image cannot be pulled", func() {
		o := imagePullFailed("analyze", errors.New("UNAUTHORIZED"))
		status := podStatus(pod, o, now)

		Expect(status.Phase).To(Equal(corev1.PodPending))
		Expect(states(status.InitContainerStatuses)[:3]).To(Equal([]state{
			{name: "prepare"}, {name: "analyze", waiting: "ErrImagePull", message: "UNAUTHORIZED"}, {name: "detect", waiting: "PodInitializing"},
		}))

		Expect(waitsAlready(pod, o)).To(BeFalse())
		pod.Status = status
		Expect(waitsAlready(pod, o)).To(BeTrue())
		Expect(waitsAlready(pod, imagePullFailed("analyze", errors.New("NOT FOUND")))).To(BeFalse())
	})

	It("keeps the pod's start time", func() {
		started := metav1.NewTime(now.Add(-10 * time.Second))
		pod.Status.StartTime = &started
		Expect(podStatus(pod, succeeded(""), now).StartTime).To(Equal(&started))
	})
})
