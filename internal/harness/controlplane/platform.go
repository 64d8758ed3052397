package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// With a node, the platform runs on it as an operator installs it (ADR 4): HNC and kpack from
// their releases' manifests (releases.go), cf-hnc from config/default, each from its image in
// the local registry, which the node pulls. What the control plane does to them is what an
// operator or a fault does to a Deployment: scale it, delete its pods, kill a container.

// A platformDeployment is a Deployment of the platform, known to the fault methods by its
// component name.
type platformDeployment struct {
	component, namespace, name string
}

// The platform's Deployments, in the order they are installed.
var (
	hncDeployment          = platformDeployment{"hnc-manager", "hnc-system", "hnc-controller-manager"}
	kpackController        = platformDeployment{"kpack-controller", kpackNamespace, "kpack-controller"}
	kpackWebhook           = platformDeployment{"kpack-webhook", kpackNamespace, "kpack-webhook"}
	managerDeployment      = platformDeployment{"cf-hnc-manager", install.Namespace, install.ManagerDeployment}
	apiDeployment          = platformDeployment{"cf-api", install.Namespace, install.APIDeployment}
	allPlatformDeployments = []platformDeployment{hncDeployment, kpackController, kpackWebhook, managerDeployment, apiDeployment, gatewayDeployment}
)

// rolloutTimeout bounds a Deployment's rollout: pulling its image from the local registry,
// starting, and, for the webhook servers, their certificate reaching the pod's volume.
const rolloutTimeout = 3 * time.Minute

// platform is what the control plane installed on the node.
type platform struct {
	// replicas are the replicas each installed Deployment runs when it is not stopped.
	replicas map[platformDeployment]int32
	// stopped are the Deployments StopComponent scaled to zero.
	stopped   map[platformDeployment]bool
	clientset *kubernetes.Clientset
}

func (cp *ControlPlane) platformDeployment(component string) (platformDeployment, bool) {
	if cp.platform == nil {
		return platformDeployment{}, false
	}
	for d := range cp.platform.replicas {
		if d.component == component {
			return d, true
		}
	}
	return platformDeployment{}, false
}

// applyPlatform applies objs, and records the replicas of the Deployments among them.
func (cp *ControlPlane) applyPlatform(ctx context.Context, objs []*unstructured.Unstructured) error {
	if err := install.Apply(ctx, cp.Client, objs); err != nil {
		return err
	}
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" {
			continue
		}
		for _, d := range allPlatformDeployments {
			if d.namespace == obj.GetNamespace() && d.name == obj.GetName() {
				replicas, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
				if !found {
					replicas = 1
				}
				cp.platform.replicas[d] = int32(replicas)
				delete(cp.platform.stopped, d)
			}
		}
	}
	return nil
}

// waitRolledOut waits until every replica of d runs its current template and is available, and
// no pod of an earlier template is left. If it does not happen in time, the error names what
// keeps each pod from being ready, with the last lines of its containers' logs.
func (cp *ControlPlane) waitRolledOut(ctx context.Context, d platformDeployment) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		last = cp.rolledOut(ctx, d)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s did not roll out in %s: %v%s", d.component, rolloutTimeout, last, cp.describePods(ctx, d))
	}
	return nil
}

func (cp *ControlPlane) rolledOut(ctx context.Context, d platformDeployment) error {
	deployment := &appsv1.Deployment{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: d.namespace, Name: d.name}, deployment); err != nil {
		return err
	}
	want := ptr.Deref(deployment.Spec.Replicas, 1)
	s := deployment.Status
	switch {
	case s.ObservedGeneration < deployment.Generation:
		return errors.New("its controller has not seen the newest template")
	case s.UpdatedReplicas != want || s.AvailableReplicas != want || s.Replicas != want:
		return fmt.Errorf("%d of %d replicas are updated, %d available, %d in all", s.UpdatedReplicas, want, s.AvailableReplicas, s.Replicas)
	}
	return nil
}

// WaitRolledOut waits until the platform Deployment of component (StopComponent names them)
// runs its current template in every replica, for a test or measurement that changed it.
func (cp *ControlPlane) WaitRolledOut(ctx context.Context, component string) error {
	d, ok := cp.platformDeployment(component)
	if !ok {
		return fmt.Errorf("no platform Deployment %q", component)
	}
	return cp.waitRolledOut(ctx, d)
}

// podsOf lists the pods of d.
func (cp *ControlPlane) podsOf(ctx context.Context, d platformDeployment) ([]corev1.Pod, error) {
	deployment := &appsv1.Deployment{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: d.namespace, Name: d.name}, deployment); err != nil {
		return nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(deployment.Spec.Selector)
	if err != nil {
		return nil, err
	}
	pods := &corev1.PodList{}
	if err := cp.Client.List(ctx, pods, client.InNamespace(d.namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// describePods says, for each pod of d that is not ready, why, with the last lines of the logs
// of its containers that are not ready.
func (cp *ControlPlane) describePods(ctx context.Context, d platformDeployment) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	pods, err := cp.podsOf(ctx, d)
	if err != nil {
		return "\n  (its pods could not be listed: " + err.Error() + ")"
	}
	var b strings.Builder
	for _, pod := range pods {
		if podReady(&pod) {
			continue
		}
		fmt.Fprintf(&b, "\n  pod %s/%s: %s", pod.Namespace, pod.Name, pod.Status.Phase)
		for _, c := range pod.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				fmt.Fprintf(&b, "; %s: %s", c.Type, c.Message)
			}
		}
		for _, status := range pod.Status.ContainerStatuses {
			if status.Ready {
				continue
			}
			fmt.Fprintf(&b, "\n    container %s: %s (restarts: %d)", status.Name, containerState(status), status.RestartCount)
			if logs := cp.containerLogs(ctx, &pod, status.Name, 20); logs != "" {
				fmt.Fprintf(&b, "; its log ends:\n%s", indent(logs, "      "))
			}
		}
	}
	return b.String()
}

// containerState says what a container is doing, in the kubelet's words.
func containerState(s corev1.ContainerStatus) string {
	switch {
	case s.State.Waiting != nil:
		return strings.TrimSpace("waiting: " + s.State.Waiting.Reason + " " + s.State.Waiting.Message)
	case s.State.Terminated != nil:
		return fmt.Sprintf("terminated: %s (exit code %d) %s", s.State.Terminated.Reason, s.State.Terminated.ExitCode, s.State.Terminated.Message)
	case s.State.Running != nil && s.Started != nil && !*s.Started:
		return "running, not started yet (startup probe)"
	case s.State.Running != nil:
		return "running, not ready"
	}
	return "not created yet"
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// containerLogs are the last lines of a container's log, as `kubectl logs --tail` reads them
// from the kubelet.
func (cp *ControlPlane) containerLogs(ctx context.Context, pod *corev1.Pod, container string, lines int64) string {
	req := cp.platform.clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container, TailLines: &lines})
	data, err := req.DoRaw(ctx)
	if err != nil {
		return ""
	}
	return strings.TrimRight(string(data), "\n")
}

func indent(text, prefix string) string {
	return prefix + strings.ReplaceAll(text, "\n", "\n"+prefix)
}

// unhealthyPlatform names the platform's pods that are broken: a container that keeps crashing,
// an image that cannot be pulled, a container that cannot be made. A Deployment that is being
// rolled or was stopped is not broken.
func (cp *ControlPlane) unhealthyPlatform(ctx context.Context) error {
	if cp.platform == nil {
		return nil
	}
	var errs []error
	for d := range cp.platform.replicas {
		if cp.platform.stopped[d] {
			continue
		}
		pods, err := cp.podsOf(ctx, d)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.component, err))
			continue
		}
		for _, pod := range pods {
			for _, status := range pod.Status.ContainerStatuses {
				if w := status.State.Waiting; w != nil && slices.Contains(brokenReasons, w.Reason) {
					errs = append(errs, fmt.Errorf("%s: pod %s: container %s: %s%s", d.component, pod.Name, status.Name, containerState(status), cp.describePods(ctx, d)))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// brokenReasons are the kubelet's reasons for a container that waits and will not get better
// by itself.
var brokenReasons = []string{"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "CreateContainerError", "InvalidImageName"}

// scale sets d's replicas and waits until the Deployment runs that many, or, for zero, until
// its last pod is gone.
func (cp *ControlPlane) scale(ctx context.Context, d platformDeployment, replicas int32) error {
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: d.namespace, Name: d.name}}
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas))
	if err := cp.Client.Patch(ctx, deployment, patch); err != nil {
		return fmt.Errorf("scaling %s to %d: %w", d.component, replicas, err)
	}
	if replicas > 0 {
		return cp.waitRolledOut(ctx, d)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cp.podsOf(ctx, d)
		return err == nil && len(pods) == 0, nil
	})
}

// deletePods deletes d's pods at once, with no grace period, as a node failing under them
// would; the Deployment makes new ones.
func (cp *ControlPlane) deletePods(ctx context.Context, d platformDeployment, which func(*corev1.Pod) bool) error {
	pods, err := cp.podsOf(ctx, d)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		if which(&pod) {
			if err := cp.Client.Delete(ctx, &pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// savePlatformLogs writes the logs of the platform's containers, those of their previous runs
// too, into the log directory (<component>.<pod>.log), before the node that keeps them goes.
func (cp *ControlPlane) savePlatformLogs(ctx context.Context) {
	if cp.platform == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for d := range cp.platform.replicas {
		pods, err := cp.podsOf(ctx, d)
		if err != nil {
			continue
		}
		for _, pod := range pods {
			f, err := os.Create(filepath.Join(cp.paths.logDir(), d.component+"."+pod.Name+".log"))
			if err != nil {
				continue
			}
			for _, status := range pod.Status.ContainerStatuses {
				for _, previous := range []bool{true, false} {
					if previous && status.RestartCount == 0 {
						continue
					}
					req := cp.platform.clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: status.Name, Previous: previous})
					if stream, err := req.Stream(ctx); err == nil {
						fmt.Fprintf(f, "==> container %s (previous run: %v)\n", status.Name, previous)
						_, _ = io.Copy(f, stream)
						stream.Close()
					}
				}
			}
			f.Close()
		}
	}
}

// PlatformPods lists every pod of the platform's Deployments, for `make run`'s status table.
func (cp *ControlPlane) PlatformPods(ctx context.Context) ([]corev1.Pod, error) {
	if cp.platform == nil {
		return nil, nil
	}
	var all []corev1.Pod
	for _, d := range allPlatformDeployments {
		if _, ok := cp.platform.replicas[d]; !ok {
			continue
		}
		pods, err := cp.podsOf(ctx, d)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		all = append(all, pods...)
	}
	return all, nil
}
