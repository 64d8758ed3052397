package orgspace

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

var _ = Describe("pacing a space's wait for HNC's copies (pure logic)", func() {
	const space = types.UID("space")
	var (
		pacer *waitPacer
		start time.Time
	)
	statusOf := func(readyReason, buildReadyReason, message string) *cfv1alpha1.CFSpaceStatus {
		ready := metav1.Condition{Type: cfv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: readyReason}
		if readyReason != cfv1alpha1.NamespaceReadyReason {
			ready.Status = metav1.ConditionFalse
		}
		buildReady := metav1.Condition{Type: cfv1alpha1.BuildReadyCondition, Status: metav1.ConditionFalse, Reason: buildReadyReason, Message: message}
		if buildReadyReason == cfv1alpha1.BuildConfigCompleteReason {
			buildReady.Status = metav1.ConditionTrue
		}
		return &cfv1alpha1.CFSpaceStatus{Conditions: []metav1.Condition{ready, buildReady}}
	}
	pending := func(message string) *cfv1alpha1.CFSpaceStatus {
		return statusOf(cfv1alpha1.NamespaceReadyReason, cfv1alpha1.PropagationPendingReason, message)
	}

	BeforeEach(func() {
		pacer = newWaitPacer(time.Second)
		start = time.Now()
		Expect(pacer.hold(space, statusOf(cfv1alpha1.AnchorPendingReason, cfv1alpha1.NamespaceNotReadyReason, ""),
			pending("Secret a, Secret b"), start)).To(BeZero(), "the start of a wait is written at once")
	})

	It("holds back what the wait waits for until an interval after the last write, then writes it", func() {
		Expect(pacer.hold(space, pending("Secret a, Secret b"), pending("Secret b"), start.Add(300*time.Millisecond))).
			To(Equal(700 * time.Millisecond))
		Expect(pacer.hold(space, pending("Secret a, Secret b"), pending("Secret b"), start.Add(time.Second))).To(BeZero())
		Expect(pacer.hold(space, pending("Secret b"), pending("ServiceAccount c"), start.Add(1500*time.Millisecond))).
			To(Equal(500*time.Millisecond), "the interval counts from the last write")
	})

	It("writes the end of a wait at once", func() {
		Expect(pacer.hold(space, pending("Secret a, Secret b"), statusOf(cfv1alpha1.NamespaceReadyReason, cfv1alpha1.BuildConfigCompleteReason, ""),
			start.Add(100*time.Millisecond))).To(BeZero())
		Expect(pacer.hold(space, pending("Secret a, Secret b"), statusOf(cfv1alpha1.NamespaceReadyReason, cfv1alpha1.InvalidDockerConfigReason, "broken"),
			start.Add(200*time.Millisecond))).To(BeZero(), "a problem for a person is no wait")
	})

	It("writes a wait at once when anything but what it waits for changed", func() {
		regenerated := pending("Secret b")
		regenerated.Conditions[1].ObservedGeneration = 2
		Expect(pacer.hold(space, pending("Secret a, Secret b"), regenerated, start.Add(100*time.Millisecond))).To(BeZero())
		Expect(pacer.hold(space, pending("Secret b"), statusOf(cfv1alpha1.NamespaceReadyReason, cfv1alpha1.BuilderNotReadyReason, "building"),
			start.Add(200*time.Millisecond))).To(BeZero(), "another wait")
	})

	It("holds nothing back for a status that did not change, or after a restart", func() {
		Expect(pacer.hold(space, pending("Secret b"), pending("Secret b"), start.Add(100*time.Millisecond))).To(BeZero())
		Expect(newWaitPacer(time.Second).hold(space, pending("Secret a, Secret b"), pending("Secret b"), start)).To(BeZero())
	})
})
