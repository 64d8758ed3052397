package builders

import (
	"cmp"
	"slices"
	"strings"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Pacing a rollout. kpack starts a rebuild of every Image on a Builder as soon as the Builder
// changes, and cf-hnc starts its own rebases as soon as a run image changes: a stack fix would
// start a build pod per app at once. A mutating webhook puts a scheduling gate on every
// rebuild pod in a CF space (kpack copies a Build's reason annotation onto its pod), and the
// rollout reconciler lifts the gate from at most --max-concurrent-rebuilds pods at a time,
// stack fixes first. Pushes are not gated. A gated pod is not scheduled: nothing runs it, and
// its Build waits, neither failed nor timing out. With the manager down, the webhook fails
// open: pods are then made without the gate and run at once, as they would without cf-hnc.
//
// Only kpack's pods in CF's tree take part: a pod that a kpack Build controls, in a namespace
// that the manager caches (manager.Options caches only the namespaces of CF's tree). Anybody who
// may create pods somewhere can put kpack's label and cf-hnc's annotation on them; such pods
// must neither hold the foundation's rebuilds back nor be written by the manager. Only kpack may
// put the label on a pod (config/policies/rebuilds.yaml), and the manager may change nothing
// of a pod but the gate, in the tree only (config/policies/manager.yaml).

const (
	// RolloutGate is the scheduling gate on a rebuild pod that waits for its turn.
	RolloutGate = "workloads.cloudfoundry.org/rollout"
	// PacedAnnotation is on every rebuild pod that cf-hnc paces, also once its gate is gone.
	PacedAnnotation = "workloads.cloudfoundry.org/paced"
)

// pacedReasons are kpack's reasons for the builds that no push asked for.
var pacedReasons = []string{"STACK", "BUILDPACK", "LIFECYCLE"}

// BuildPodSelector selects the pods that kpack makes for Builds: the manager caches only those.
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
	pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: RolloutGate})
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
	return slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == RolloutGate })
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
		aFix, bFix := a.Annotations[kpackv1alpha2.BuildReasonAnnotation] == stackOnly, b.Annotations[kpackv1alpha2.BuildReasonAnnotation] == stackOnly
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
