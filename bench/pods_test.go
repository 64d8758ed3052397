package main

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ = Describe("a kpack pod's run time from its status (pure logic)", func() {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(seconds int) metav1.Time { return metav1.NewTime(start.Add(time.Duration(seconds) * time.Second)) }
	finished := func(name string, seconds int) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: at(seconds)}}}
	}
	waiting := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}
	}
	running := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(1)}}}
	}
	pod := func(phase corev1.PodPhase, started bool, init []corev1.ContainerStatus, containers ...corev1.ContainerStatus) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "space", Name: "app-build-1-build-pod"},
			Status: corev1.PodStatus{Phase: phase, InitContainerStatuses: init, ContainerStatuses: containers}}
		if started {
			p.Status.StartTime = &metav1.Time{Time: start}
		}
		return p
	}
	lifecycle := []corev1.ContainerStatus{finished("prepare", 2), finished("analyze", 4), finished("detect", 5),
		finished("restore", 6), finished("build", 9), finished("export", 12)}

	DescribeTable("of a finished pod",
		func(p *corev1.Pod, want time.Duration) {
			Expect(podRunTime(p)).To(Equal(want))
		},
		Entry("a build: until its completion container finished", pod(corev1.PodSucceeded, true, lifecycle, finished("completion", 13)), 13*time.Second),
		Entry("a rebase: one step, then the completion container", pod(corev1.PodSucceeded, true,
			[]corev1.ContainerStatus{finished("rebase", 2)}, finished("completion", 3)), 3*time.Second),
		Entry("the completion container's finish, though an init container's status says later",
			pod(corev1.PodSucceeded, true, []corev1.ContainerStatus{finished("rebase", 5)}, finished("completion", 3)), 3*time.Second),
		Entry("a failed build whose completion container never ran: until its last step finished",
			pod(corev1.PodFailed, true, lifecycle[:5], waiting("completion")), 9*time.Second),
		Entry("within the kubelet's whole second", pod(corev1.PodSucceeded, true, nil, finished("completion", 0)), time.Duration(0)),
	)

	DescribeTable("refuses a pod that gives no run time",
		func(p *corev1.Pod, message string) {
			_, err := podRunTime(p)
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("gated or not scheduled: no start time", pod(corev1.PodPending, false, nil, waiting("completion")), "has not started"),
		Entry("still running a lifecycle step", pod(corev1.PodPending, true, []corev1.ContainerStatus{finished("prepare", 2), running("analyze")},
			waiting("completion")), "has not finished (Pending)"),
		Entry("its completion container still running", pod(corev1.PodRunning, true, lifecycle, running("completion")), "has not finished (Running)"),
		Entry("a failed pod with no container that finished", pod(corev1.PodFailed, true, nil, waiting("completion")), "has not finished (Failed)"),
		Entry("finished before it started (clocks gone wrong)", pod(corev1.PodSucceeded, true, nil, finished("completion", -2)), "before it started"),
	)
})

var _ = Describe("which kpack Builds rebase onto a run image (pure logic)", func() {
	const digest = "sha256:0123"
	build := func(reason, runImage string, last *kpackv1alpha2.LastBuild) *kpackv1alpha2.Build {
		return &kpackv1alpha2.Build{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{kpackv1alpha2.BuildReasonAnnotation: reason}},
			Spec:       kpackv1alpha2.BuildSpec{RunImage: kpackv1alpha2.BuildSpecImage{Image: runImage}, LastBuild: last},
		}
	}
	last := &kpackv1alpha2.LastBuild{Image: "registry/app@sha256:aaaa", StackId: "io.cf-hnc.stack"}

	DescribeTable("a rebase is reason exactly STACK, from a last build, onto the run image by digest",
		func(kb *kpackv1alpha2.Build, want bool) {
			Expect(rebaseOnto(kb, digest)).To(Equal(want))
		},
		Entry("kpack's rebase of an Image onto the new run image", build("STACK", "registry/run@"+digest, last), true),
		Entry("a rebase onto the run image before the fix", build("STACK", "registry/run@sha256:9999", last), false),
		Entry("a push: reasons besides STACK", build("CONFIG,STACK", "registry/run@"+digest, last), false),
		Entry("a first build: no last build to rebase", build("STACK", "registry/run@"+digest, nil), false),
		Entry("no reason at all", build("", "registry/run@"+digest, last), false),
	)
})
