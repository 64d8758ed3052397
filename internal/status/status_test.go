package status_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/status"
)

func TestStatus(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "status (apiserver)")
}

var _ = Describe("reporting status, against the apiserver", Ordered, func() {
	var (
		k8s      client.Client
		recorder *events.FakeRecorder
		reporter *status.Reporter
	)

	BeforeAll(func(ctx SpecContext) {
		cp, err := controlplane.Start(ctx, controlplane.Options{WorkDir: ".local/status"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cp.Stop)
		k8s = cp.Client
	}, NodeTimeout(2*time.Minute))

	BeforeEach(func() {
		recorder = events.NewFakeRecorder(10)
		reporter = status.NewReporter(k8s, recorder)
	})

	newOrg := func(ctx SpecContext) *cfv1alpha1.CFOrg {
		org := &cfv1alpha1.CFOrg{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: string(uuid.NewUUID())},
			Spec:       cfv1alpha1.CFOrgSpec{DisplayName: "acme"},
		}
		Expect(k8s.Create(ctx, org)).To(Succeed())
		return org
	}
	ready := func(reason string) metav1.Condition {
		return metav1.Condition{Type: cfv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: "waiting"}
	}

	It("reports a condition set on an error path, stamped with its generation, with one event", func(ctx SpecContext) {
		org := newOrg(ctx)
		reconcile := func() (err error) {
			report := reporter.Track(org)
			defer func() { err = errors.Join(err, report(ctx)) }()
			status.Set(org, ready(cfv1alpha1.AnchorConflictReason))
			return errors.New("the anchor could not be made")
		}
		Expect(reconcile()).To(MatchError("the anchor could not be made"))

		stored := &cfv1alpha1.CFOrg{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(org), stored)).To(Succeed())
		Expect(stored.Status.Conditions).To(ConsistOf(And(
			HaveField("Reason", cfv1alpha1.AnchorConflictReason), HaveField("ObservedGeneration", stored.Generation))))
		Expect(stored.Status.ObservedGeneration).To(Equal(stored.Generation))
		Expect(recorder.Events).To(Receive(Equal("Warning AnchorConflict Ready: waiting")))
	})

	It("records an event when a condition turns True or needs a person, none for a wait on another component", func(ctx SpecContext) {
		org := newOrg(ctx)
		step := func(c metav1.Condition) {
			report := reporter.Track(org)
			status.Set(org, c)
			Expect(report(ctx)).To(Succeed())
		}
		step(ready(cfv1alpha1.AnchorPendingReason))
		Expect(recorder.Events).NotTo(Receive(), "HNC makes the namespace by itself")

		step(metav1.Condition{Type: cfv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.NamespaceReadyReason, Message: "placed"})
		Expect(recorder.Events).To(Receive(Equal("Normal NamespaceReady Ready: placed")))

		step(metav1.Condition{Type: cfv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.NamespaceReadyReason, Message: "placed again"})
		Expect(recorder.Events).NotTo(Receive(), "a new message alone is no event")

		step(ready(cfv1alpha1.AnchorConflictReason))
		Expect(recorder.Events).To(Receive(Equal("Warning AnchorConflict Ready: waiting")))
	})

	It("writes nothing when the status did not change, whatever else changed", func(ctx SpecContext) {
		org := newOrg(ctx)
		report := reporter.Track(org)
		status.Set(org, ready(cfv1alpha1.AnchorConflictReason))
		Expect(report(ctx)).To(Succeed())
		<-recorder.Events
		written := org.ResourceVersion

		report = reporter.Track(org)
		org.Finalizers = append(org.Finalizers, "example.com/kept-in-memory-only")
		status.Set(org, ready(cfv1alpha1.AnchorConflictReason))
		Expect(report(ctx)).To(Succeed())
		Expect(org.ResourceVersion).To(Equal(written))
		Expect(recorder.Events).NotTo(Receive())
	})

	It("removes a status field that the reconcile cleared", func(ctx SpecContext) {
		app := &cfv1alpha1.CFApp{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: string(uuid.NewUUID())},
			Spec:       cfv1alpha1.CFAppSpec{DisplayName: "app", DesiredState: cfv1alpha1.StartedState, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}},
		}
		Expect(k8s.Create(ctx, app)).To(Succeed())
		report := reporter.Track(app)
		app.Status.HeldDropletRef = &corev1.LocalObjectReference{Name: "held"}
		Expect(report(ctx)).To(Succeed())

		report = reporter.Track(app)
		app.Status.HeldDropletRef = nil
		Expect(report(ctx)).To(Succeed())
		stored := &cfv1alpha1.CFApp{}
		Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(app), stored)).To(Succeed())
		Expect(stored.Status.HeldDropletRef).To(BeNil())
	})

	It("reports the whole status, so a field that a later write set goes when a reconcile of a stale object clears it", func(ctx SpecContext) {
		app := &cfv1alpha1.CFApp{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: string(uuid.NewUUID())},
			Spec:       cfv1alpha1.CFAppSpec{DisplayName: "app", DesiredState: cfv1alpha1.StartedState, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}},
		}
		Expect(k8s.Create(ctx, app)).To(Succeed())
		stale := app.DeepCopy()
		report := reporter.Track(app)
		app.Status.HeldDropletRef = &corev1.LocalObjectReference{Name: "held"}
		Expect(report(ctx)).To(Succeed())

		// The cache has yet to see that write: the next reconcile starts from the object before it.
		report = reporter.Track(stale)
		status.Set(stale, ready(cfv1alpha1.AnchorPendingReason))
		Expect(report(ctx)).To(Succeed())
		stored := &cfv1alpha1.CFApp{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), stored)).To(Succeed())
		Expect(stored.Status.HeldDropletRef).To(BeNil())
		Expect(stored.Status.Conditions).To(ConsistOf(HaveField("Reason", cfv1alpha1.AnchorPendingReason)))
	})
})
