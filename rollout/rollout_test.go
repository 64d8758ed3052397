package rollout

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"code.cloudfoundry.org/cf-hnc/staging"
)

var _ = Describe("pacing rebuilds", func() {
	// tree is CF's tree as the rollout sees it: the namespaces the manager caches.
	tree := sets.New("space")
	// buildPod is a pod as kpack makes it for a Build, in a space.
	buildPod := func(name, reason string, second int) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "space", Name: name, UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(second) * time.Second)),
			Labels:            map[string]string{kpackv1alpha2.BuildLabel: name},
			Annotations:       map[string]string{kpackv1alpha2.BuildReasonAnnotation: reason},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: kpackv1alpha2.SchemeGroupVersion.String(), Kind: kpackv1alpha2.BuildKind,
				Name: name, UID: types.UID("build-" + name), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}}}
	}

	DescribeTable("gates the pods of rebuilds, not those of pushes",
		func(reason string, gates bool) {
			pod := buildPod("p", reason, 0)
			Expect(gate(&pod)).To(Equal(gates))
			Expect(gated(&pod)).To(Equal(gates))
			if !gates {
				Expect(pod.Annotations).NotTo(HaveKey(PacedAnnotation))
				return
			}
			Expect(pod.Annotations).To(HaveKeyWithValue(PacedAnnotation, "true"))
			Expect(gate(&pod)).To(BeFalse(), "once")
			Expect(pod.Spec.SchedulingGates).To(HaveLen(1))
		},
		Entry("a stack fix", "STACK", true),
		Entry("a buildpack upgrade", "BUILDPACK", true),
		Entry("several rebuild reasons", "BUILDPACK,STACK,LIFECYCLE", true),
		Entry("a push", "CONFIG", false),
		Entry("a push with a stack fix", "CONFIG,STACK", false),
		Entry("a trigger", "TRIGGER", false),
		Entry("no reason", "", false),
	)

	DescribeTable("leaves pods that kpack did not make for a Build alone",
		func(notKpacks func(*corev1.Pod)) {
			pod := buildPod("p", "STACK", 0)
			notKpacks(&pod)
			Expect(gate(&pod)).To(BeFalse())
			Expect(gated(&pod)).To(BeFalse())
		},
		Entry("without kpack's label", func(p *corev1.Pod) { delete(p.Labels, kpackv1alpha2.BuildLabel) }),
		Entry("without a controller", func(p *corev1.Pod) { p.OwnerReferences = nil }),
		Entry("controlled by another kind", func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "Job" }),
		Entry("controlled by a Build of another group", func(p *corev1.Pod) { p.OwnerReferences[0].APIVersion = "example.org/v1" }),
		Entry("owned by a Build that is not its controller", func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }),
	)

	gatedPod := func(name, reason string, second int) corev1.Pod {
		p := buildPod(name, reason, second)
		gate(&p)
		return p
	}
	released := func(p rolloutPlan) []string {
		var names []string
		for _, pod := range p.release {
			names = append(names, pod.Name)
		}
		return names
	}

	It("lets as many run as keep the limit, stack fixes first, then the oldest", func() {
		running := gatedPod("running", "BUILDPACK", 0)
		running.Spec.SchedulingGates = nil
		done := gatedPod("done", "STACK", 0)
		done.Spec.SchedulingGates = nil
		done.Status.Phase = corev1.PodSucceeded
		pods := []corev1.Pod{running, done, gatedPod("upgrade-old", "BUILDPACK", 1), gatedPod("upgrade-new", "BUILDPACK", 3), gatedPod("fix", "STACK", 5), buildPod("push", "CONFIG", 0)}

		p := planRollout(pods, tree, 3, nil)
		Expect(released(p)).To(Equal([]string{"fix", "upgrade-old"}))
		Expect([]int{p.running, p.waiting}).To(Equal([]int{3, 1}), "running, waiting")

		Expect(released(planRollout(pods, tree, 1, nil))).To(BeEmpty(), "one runs already")
		Expect(released(planRollout(pods, tree, 0, nil))).To(HaveLen(3), "no limit")
	})

	It("plans the same from the pods as the cache keeps them, without their containers", func() {
		running := gatedPod("running", "STACK", 0)
		running.Spec.SchedulingGates = nil
		done := gatedPod("done", "STACK", 0)
		done.Status.Phase = corev1.PodFailed
		deleting := gatedPod("deleting", "STACK", 0)
		deleting.DeletionTimestamp = &metav1.Time{Time: epoch}
		pods := []corev1.Pod{gatedPod("upgrade", "BUILDPACK", 1), running, done, deleting, gatedPod("fix-new", "STACK", 3), gatedPod("fix-old", "STACK", 2)}
		var cached []corev1.Pod
		for _, pod := range pods {
			pod.Spec.Containers = []corev1.Container{{Name: "completion", Image: "lifecycle", Env: []corev1.EnvVar{{Name: "CNB_PLATFORM_API", Value: "0.13"}}}}
			pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kpack"}}
			obj, err := staging.TrimBuildPod(&pod)
			Expect(err).NotTo(HaveOccurred())
			trimmed := obj.(*corev1.Pod)
			Expect(trimmed.Spec.Containers).To(BeEmpty())
			Expect(trimmed.Status.Conditions).To(BeEmpty())
			Expect(trimmed.ManagedFields).To(BeEmpty())
			cached = append(cached, *trimmed)
		}

		whole, kept := planRollout(pods, tree, 3, nil), planRollout(cached, tree, 3, nil)
		Expect(released(kept)).To(Equal([]string{"fix-old", "fix-new"}))
		Expect(released(kept)).To(Equal(released(whole)))
		Expect([]int{kept.running, kept.waiting}).To(Equal([]int{whole.running, whole.waiting}))
		Expect([]int{kept.running, kept.waiting}).To(Equal([]int{3, 1}), "running, waiting")
	})

	It("counts the pods it let run as running, whatever a stale cache says", func() {
		pods := []corev1.Pod{gatedPod("a", "STACK", 0), gatedPod("b", "STACK", 1)}
		Expect(released(planRollout(pods, tree, 1, map[types.UID]bool{"a": true}))).To(BeEmpty())
	})

	It("neither counts nor lets run pods outside CF's tree, or that no kpack Build controls", func() {
		// Anybody who may create pods somewhere may label and annotate them as kpack and cf-hnc do.
		var pods []corev1.Pod
		for i := range 10 {
			held := gatedPod(fmt.Sprintf("held-%d", i), "STACK", 0)
			held.Namespace = "team-x"
			held.Spec.SchedulingGates = nil // running, as far as the annotation tells, and never done
			pods = append(pods, held)
		}
		outside := gatedPod("outside", "STACK", 0)
		outside.Namespace = "team-x"
		uncontrolledRunning, uncontrolledGated := gatedPod("uncontrolled-running", "STACK", 0), gatedPod("uncontrolled-gated", "STACK", 0)
		uncontrolledRunning.Spec.SchedulingGates = nil
		for _, pod := range []*corev1.Pod{&uncontrolledRunning, &uncontrolledGated} {
			pod.OwnerReferences[0].Controller = nil
		}
		pods = append(pods, outside, uncontrolledRunning, uncontrolledGated, gatedPod("fix", "STACK", 5))

		p := planRollout(pods, tree, 1, nil)
		Expect(released(p)).To(Equal([]string{"fix"}), "the gated pod of a kpack Build in a space")
		Expect([]int{p.running, p.waiting}).To(Equal([]int{1, 0}), "running, waiting: only the pods of kpack Builds in the tree")
	})
})
