package rollout

import (
	"cmp"
	"slices"
	"strings"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"code.cloudfoundry.org/cf-hnc/staging"
)

const (
	// Gate is the scheduling gate on a rebuild pod that waits for its turn.
	Gate = "workloads.cloudfoundry.org/rollout"
	// PacedAnnotation is on every rebuild pod that cf-hnc paces, also once its gate is gone.
	PacedAnnotation = "workloads.cloudfoundry.org/paced"
)

// pacedReasons are kpack's reasons for the builds that no push asked for.
var pacedReasons = []string{staging.RebaseReason, "BUILDPACK", "LIFECYCLE"}

// isRebuildPod says whether a pod is kpack's pod of a rebuild: every reason of its Build is one
// that no push gives.
func isRebuildPod(pod *corev1.Pod) bool {
	if _, ok := pod.Labels[kpackv1alpha2.BuildLabel]; !ok || !controlledByBuild(pod) {
		return false
	}
	reasons := pod.Annotations[kpackv1alpha2.BuildReasonAnnotation]
	return reasons != "" && !slices.ContainsFunc(strings.Split(reasons, ","), func(r string) bool { return !slices.Contains(pacedReasons, r) })
}

// gate adds the rollout gate to a rebuild pod that is being created; it says whether it did.
func gate(pod *corev1.Pod) bool {
	if !isRebuildPod(pod) || gated(pod) || pod.Spec.NodeName != "" {
		return false
	}
	pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: Gate})
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[PacedAnnotation] = "true"
	return true
}

// controlledByBuild says whether a kpack Build is the pod's controller, as it is of every pod
// that kpack makes for a Build.
func controlledByBuild(pod *corev1.Pod) bool {
	owner := metav1.GetControllerOfNoCopy(pod)
	return owner != nil && owner.Kind == kpackv1alpha2.BuildKind &&
		strings.HasPrefix(owner.APIVersion, kpackv1alpha2.SchemeGroupVersion.Group+"/")
}

// paced says whether the rollout counts a pod, and may let it run: a pod that cf-hnc's webhook
// gated, that a kpack Build controls, in a namespace of CF's tree.
func paced(pod *corev1.Pod, tree sets.Set[string]) bool {
	_, ok := pod.Annotations[PacedAnnotation]
	return ok && tree.Has(pod.Namespace) && controlledByBuild(pod)
}

func gated(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == Gate })
}

func podDone(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// rolloutPlan is which paced pods wait and run, and which to let run now.
type rolloutPlan struct {
	waiting, running int
	release          []*corev1.Pod
}

// planRollout decides which gated rebuild pods in the tree's namespaces may run: as many as
// keep at most limit paced pods running (no limit if limit < 1), stack fixes first, then the
// oldest. Pods in released had their gate lifted already, whatever the (possibly stale) pods
// say. Pods outside the tree, or that no kpack Build controls, are neither counted nor let run.
func planRollout(pods []corev1.Pod, tree sets.Set[string], limit int, released map[types.UID]bool) rolloutPlan {
	var p rolloutPlan
	var waiting []*corev1.Pod
	for i := range pods {
		pod := &pods[i]
		if !paced(pod, tree) || podDone(pod) {
			continue
		}
		if gated(pod) && !released[pod.UID] {
			waiting = append(waiting, pod)
		} else {
			p.running++
		}
	}
	slices.SortFunc(waiting, func(a, b *corev1.Pod) int {
		aFix, bFix := a.Annotations[kpackv1alpha2.BuildReasonAnnotation] == staging.RebaseReason, b.Annotations[kpackv1alpha2.BuildReasonAnnotation] == staging.RebaseReason
		switch {
		case aFix && !bFix:
			return -1
		case bFix && !aFix:
			return 1
		}
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	n := len(waiting)
	if limit > 0 {
		n = min(n, max(0, limit-p.running))
	}
	p.release = waiting[:n]
	p.waiting = len(waiting) - n
	p.running += n
	return p
}
