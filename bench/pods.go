package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// buildPodRunTime is the run time of the pod of a kpack Build, read from the apiserver.
func (b *bench) buildPodRunTime(ctx context.Context, namespace, kpackBuild string) (time.Duration, error) {
	if kpackBuild == "" {
		return 0, fmt.Errorf("no kpack Build in its status")
	}
	pods := &corev1.PodList{}
	if err := b.k8s.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{kpackv1alpha2.BuildLabel: kpackBuild}); err != nil {
		return 0, err
	}
	if len(pods.Items) != 1 {
		return 0, fmt.Errorf("kpack Build %s/%s has %d pods, not 1", namespace, kpackBuild, len(pods.Items))
	}
	return podRunTime(&pods.Items[0])
}

// rebasePods waits until every rebase onto the run image has finished (kpack's rebases of the
// apps' Images and cf-hnc's own) and returns the run times of the pods of those that
// succeeded, and how many failed.
func (b *bench) rebasePods(ctx context.Context, runImageDigest string) (Distribution, int, error) {
	var rebases []kpackv1alpha2.Build
	err := b.seen.wait(ctx, 5*time.Minute, "every rebase onto the new run image finished", func() bool {
		list := &kpackv1alpha2.BuildList{}
		if err := b.k8s.List(ctx, list); err != nil {
			return false
		}
		rebases = rebases[:0]
		for _, kb := range list.Items {
			if !rebaseOnto(&kb, runImageDigest) {
				continue
			}
			if !kb.Finished() {
				return false
			}
			rebases = append(rebases, kb)
		}
		return true
	})
	if err != nil {
		return Distribution{}, 0, err
	}
	var times []time.Duration
	failed := 0
	for _, kb := range rebases {
		if !kb.IsSuccess() {
			failed++
			continue
		}
		t, err := b.buildPodRunTime(ctx, kb.Namespace, kb.Name)
		if err != nil {
			return Distribution{}, 0, err
		}
		times = append(times, t)
	}
	return distribution("kpack rebase pod run", times), failed, nil
}

// rebaseOnto says whether a kpack Build rebases a droplet onto the run image of the digest:
// kpack runs a rebase pod for a Build of reason exactly STACK with a last build.
func rebaseOnto(kb *kpackv1alpha2.Build, runImageDigest string) bool {
	return kb.Annotations[kpackv1alpha2.BuildReasonAnnotation] == kpackv1alpha2.BuildReasonStack &&
		kb.Spec.LastBuild != nil && strings.HasSuffix(kb.Spec.RunImage.Image, "@"+runImageDigest)
}

// podRunTime is how long a finished kpack pod ran on the node, as its own status says: from
// the kubelet's start of the pod until its completion container finished or, in a finished
// pod whose completion container did not run (a lifecycle step failed), until its last
// container finished. A rebuild pod that cf-hnc's rollout gates has no start time until it is
// let run, so its wait is not counted. The kubelet's times have whole seconds.
func podRunTime(pod *corev1.Pod) (time.Duration, error) {
	if pod.Status.StartTime == nil {
		return 0, fmt.Errorf("pod %s/%s has not started", pod.Namespace, pod.Name)
	}
	var end time.Time
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == kpackv1alpha2.CompletionContainerName && s.State.Terminated != nil {
			end = s.State.Terminated.FinishedAt.Time
		}
	}
	if end.IsZero() && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) {
		for _, s := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
			if s.State.Terminated != nil {
				end = maxTime(end, s.State.Terminated.FinishedAt.Time)
			}
		}
	}
	if end.IsZero() {
		return 0, fmt.Errorf("pod %s/%s has not finished (%s)", pod.Namespace, pod.Name, pod.Status.Phase)
	}
	if end.Before(pod.Status.StartTime.Time) {
		return 0, fmt.Errorf("pod %s/%s finished at %s, before it started at %s", pod.Namespace, pod.Name,
			end.Format(time.RFC3339), pod.Status.StartTime.Format(time.RFC3339))
	}
	return end.Sub(pod.Status.StartTime.Time), nil
}
