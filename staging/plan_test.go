package staging

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/builders"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
)

// readyToStage is a build whose app, package, space and default Builder are all there.
func readyToStage() stagingInputs {
	config := space.DeepCopy()
	config.Builder = &cfv1alpha1.PlacedBuilder{PlacedObject: cfv1alpha1.PlacedObject{Name: "default", From: "cf"}, ClusterBuilder: "cf.default"}
	return stagingInputs{
		build: &cfv1alpha1.CFBuild{
			ObjectMeta: metav1.ObjectMeta{Namespace: "space-1", Name: "build-guid", Generation: 1},
			Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: "app-guid"},
				PackageRef: corev1.LocalObjectReference{Name: "package-guid"}},
		},
		space: &cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Name: "space-1"}, Status: cfv1alpha1.CFSpaceStatus{
			Build:      config,
			Conditions: []metav1.Condition{{Type: cfv1alpha1.BuildReadyCondition, Status: metav1.ConditionTrue}},
		}},
		app:            &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: "space-1", Name: "app-guid", UID: "app-uid"}},
		pkg:            &cfv1alpha1.CFPackage{Spec: cfv1alpha1.CFPackageSpec{Source: cfv1alpha1.PackageSource{Registry: cfv1alpha1.Registry{Image: "registry.local/org-a/space-1/packages/p"}}}},
		active:         "build-guid",
		defaultBuilder: defaultBuilder,
		limits:         DefaultBuildLimits(),
	}
}

var _ = Describe("planning a build", func() {
	staging := func(p stagingPlan) metav1.Condition { return p.conditions[0] }

	DescribeTable("waits, with a reason, for what it needs; nothing is applied",
		func(change func(*stagingInputs), reason, message string) {
			in := readyToStage()
			change(&in)
			p := planStaging(in)
			Expect(staging(p)).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", reason), HaveField("Message", ContainSubstring(message))))
			Expect(p.conditions[1]).To(HaveField("Status", metav1.ConditionUnknown), "waiting is not failing")
			Expect(p.image).To(BeNil())
		},
		Entry("its app", func(in *stagingInputs) { in.app = nil }, cfv1alpha1.WaitingReason, "app app-guid does not exist"),
		Entry("an older build of the app", func(in *stagingInputs) { in.active = "older" }, cfv1alpha1.QueuedReason, "waiting for build older"),
		Entry("its package", func(in *stagingInputs) { in.pkg = nil }, cfv1alpha1.WaitingReason, "package package-guid is not uploaded"),
		Entry("the upload of its package", func(in *stagingInputs) { in.pkg.Spec.Source.Registry.Image = "" }, cfv1alpha1.WaitingReason, "is not uploaded"),
		Entry("a space that can build", func(in *stagingInputs) {
			in.space.Status.Conditions[0] = metav1.Condition{Type: cfv1alpha1.BuildReadyCondition, Status: metav1.ConditionFalse, Message: "no credentials"}
		}, cfv1alpha1.WaitingReason, "space space-1 cannot build: no credentials"),
	)

	It("points the app's Image at the package and the space's ClusterBuilder", func() {
		p := planStaging(readyToStage())
		Expect(staging(p)).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", cfv1alpha1.BuildScheduledReason)))
		Expect(p.dedicated).To(BeNil())
		Expect(p.image.Spec.Builder).To(Equal(corev1.ObjectReference{Kind: kpackv1alpha2.ClusterBuilderKind, Name: "cf.default"}))
		Expect(p.image.Spec.Source.Registry.Image).To(Equal("registry.local/org-a/space-1/packages/p"))
	})

	It("makes a dedicated Builder first, and starts only once kpack has built it", func() {
		in := readyToStage()
		in.build.Spec.Lifecycle.Data.Buildpacks = []string{"paketo-buildpacks/nodejs"}
		p := planStaging(in)
		Expect(staging(p)).To(HaveField("Reason", cfv1alpha1.BuilderNotReadyReason))
		Expect(p.dedicated).NotTo(BeNil())
		Expect(p.image).To(BeNil())

		in.dedicated = cftest.ReadyBuilder(p.dedicated)
		p = planStaging(in)
		Expect(p.image.Spec.Builder).To(Equal(corev1.ObjectReference{Kind: kpackv1alpha2.BuilderKind, Name: in.dedicated.Name}))
	})

	It("lets go of the app's dedicated Builders that its Image no longer builds with: deletes one that only the app owns", func() {
		in := readyToStage()
		owner := func(uid string) metav1.OwnerReference {
			return metav1.OwnerReference{APIVersion: cfv1alpha1.GroupVersion.String(), Kind: "CFApp", Name: uid, UID: types.UID(uid)}
		}
		dedicated := func(name string, owners ...metav1.OwnerReference) kpackv1alpha2.Builder {
			return kpackv1alpha2.Builder{ObjectMeta: metav1.ObjectMeta{Namespace: "space-1", Name: name, OwnerReferences: owners}}
		}
		in.owned = []kpackv1alpha2.Builder{dedicated("alone", owner("app-uid")), dedicated("shared", owner("other-uid"), owner("app-uid"))}
		released := func(p stagingPlan) []string {
			var names []string
			for _, r := range p.release {
				names = append(names, fmt.Sprintf("%s delete=%t", r.builder.Name, r.delete))
			}
			return names
		}
		Expect(released(planStaging(in))).To(ConsistOf("alone delete=true", "shared delete=false"))

		By("and keeps the one it builds with")
		in.build.Spec.Lifecycle.Data.Buildpacks = []string{"paketo-buildpacks/nodejs"}
		in.dedicated = cftest.ReadyBuilder(planStaging(in).dedicated)
		in.owned = append(in.owned, dedicated(in.dedicated.Name, owner("app-uid")))
		Expect(released(planStaging(in))).To(ConsistOf("alone delete=true", "shared delete=false"))
	})

	DescribeTable("fails a build only once kpack reports its dedicated Builder not Ready for the spec cf-hnc wants",
		func(change func(*kpackv1alpha2.Builder), fails bool) {
			in := readyToStage()
			in.build.Spec.Lifecycle.Data.Buildpacks = []string{"paketo-buildpacks/nodejs"}
			in.dedicated = planStaging(in).dedicated.DeepCopy()
			in.dedicated.Generation, in.dedicated.Status.ObservedGeneration = 2, 2
			in.dedicated.Status.Conditions = corev1alpha1.Conditions{
				{Type: corev1alpha1.ConditionReady, Status: corev1.ConditionFalse, Reason: kpackv1alpha2.NoLatestImageReason, Message: kpackv1alpha2.NoLatestImageMessage},
				{Type: kpackv1alpha2.ConditionUpToDate, Status: corev1.ConditionFalse, Reason: kpackv1alpha2.ReconcileFailedReason, Message: "no such buildpack"},
			}
			change(in.dedicated)
			p := planStaging(in)
			Expect(p.image).To(BeNil())
			if !fails {
				Expect(p.conditions[1]).To(And(HaveField("Status", metav1.ConditionUnknown), HaveField("Reason", cfv1alpha1.BuilderNotReadyReason)))
				Expect(p.dedicated).NotTo(BeNil(), "cf-hnc still applies it")
				return
			}
			Expect(p.conditions).To(HaveEach(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cfv1alpha1.BuilderNotReadyReason),
				HaveField("Message", HavePrefix("kpack cannot make Builder %s, of stack cflinuxfs4 and the buildpacks the lifecycle names: ", in.dedicated.Name)))))
		},
		Entry("not Ready for its current spec", func(*kpackv1alpha2.Builder) {}, true),
		Entry("not Ready for an earlier spec", func(b *kpackv1alpha2.Builder) { b.Status.ObservedGeneration = 1 }, false),
		Entry("not Ready for a spec that cf-hnc is about to change", func(b *kpackv1alpha2.Builder) { b.Spec.ServiceAccountName = "cf-build-old" }, false),
		Entry("not reported on yet", func(b *kpackv1alpha2.Builder) { b.Status = kpackv1alpha2.BuilderStatus{} }, false),
	)

	It("carries kpack's error of its last attempt, else its Ready message", func() {
		b := cftest.ReadyBuilder(builders.DesiredDedicatedBuilder("space-1", cfv1alpha1.LifecycleData{Buildpacks: []string{"x"}}, defaultBuilder, space))
		b.Status.Conditions = corev1alpha1.Conditions{
			{Type: corev1alpha1.ConditionReady, Status: corev1.ConditionFalse, Message: kpackv1alpha2.NoLatestImageMessage},
			{Type: kpackv1alpha2.ConditionUpToDate, Status: corev1.ConditionFalse, Message: "no such buildpack"},
		}
		Expect(builderFailure(b, b)).To(Equal("no such buildpack"))
		b.Status.Conditions = b.Status.Conditions[:1]
		Expect(builderFailure(b, b)).To(Equal(kpackv1alpha2.NoLatestImageMessage))
	})
})

var _ = Describe("checking a rebuild against its kpack Build", func() {
	origin := func(name, app string) cfv1alpha1.CFBuild {
		return cfv1alpha1.CFBuild{
			ObjectMeta: metav1.ObjectMeta{Namespace: "space-1", Name: name},
			Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: app},
				PackageRef: corev1.LocalObjectReference{Name: app + "-package"}, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}},
		}
	}
	kb := &kpackv1alpha2.Build{ObjectMeta: metav1.ObjectMeta{Namespace: "space-1", Name: "app-build-2",
		Labels:      map[string]string{kpackv1alpha2.BuildNumberLabel: "2"},
		Annotations: map[string]string{kpackv1alpha2.BuildReasonAnnotation: "BUILDPACK"}}}
	rebuilt := []cfv1alpha1.CFBuild{origin("first", "app"), origin("restaged", "app")}

	DescribeTable("accepts exactly the CFBuild that cf-hnc makes of the kpack Build, for any droplet it may rebuild",
		func(change func(*cfv1alpha1.CFBuild), differs string) {
			build := DesiredRebuild(kb, &rebuilt[1])
			change(build)
			if differs == "" {
				Expect(RebuildMismatch(build, kb, rebuilt)).To(BeEmpty())
				return
			}
			Expect(RebuildMismatch(build, kb, rebuilt)).To(And(
				HavePrefix(`kpack build app-build-2 makes CFBuild app-build-2 of app app, package app-package, lineage "first", kpack build number "2", reasons "BUILDPACK", and this is `),
				ContainSubstring(differs)))
		},
		Entry("the rebuild, filed under another droplet it may rebuild", func(*cfv1alpha1.CFBuild) {}, ""),
		Entry("another app's", func(b *cfv1alpha1.CFBuild) { b.Spec = origin("first", "victim").Spec }, "of app victim, package victim-package"),
		Entry("another lineage", func(b *cfv1alpha1.CFBuild) { b.Labels[cfv1alpha1.RebuildOfLabel] = "elsewhere" }, `lineage "elsewhere"`),
		Entry("another number", func(b *cfv1alpha1.CFBuild) { b.Labels[cfv1alpha1.KpackBuildNumberLabel] = "3" }, `kpack build number "3"`),
		Entry("other reasons", func(b *cfv1alpha1.CFBuild) { b.Annotations[cfv1alpha1.RebuildReasonAnnotation] = "STACK" }, `reasons "STACK"`),
		Entry("another name", func(b *cfv1alpha1.CFBuild) { b.Name = "my-build" }, "this is CFBuild my-build"),
		Entry("another lifecycle", func(b *cfv1alpha1.CFBuild) { b.Spec.Lifecycle.Data.Stack = "cflinuxfs5" }, "this is CFBuild app-build-2"),
	)

	It("accepts no rebuild of a kpack Build that rebuilds nothing", func() {
		Expect(RebuildMismatch(DesiredRebuild(kb, &rebuilt[0]), kb, nil)).To(Equal("kpack build app-build-2 rebuilds no droplet in this namespace"))
	})

	It("takes no droplet from a succeeded kpack Build that does not bear the rebuild out, and says why", func() {
		build := DesiredRebuild(kb, &rebuilt[0])
		build.Spec = origin("first", "victim").Spec
		succeeded := kb.DeepCopy()
		succeeded.Status.Conditions = corev1alpha1.Conditions{{Type: corev1alpha1.ConditionSucceeded, Status: corev1.ConditionTrue}}
		succeeded.Status.LatestImage = "registry.local/org-a/space-1/app@sha256:1"
		p := planStaging(stagingInputs{build: build, space: &cfv1alpha1.CFSpace{}, following: kb.Name, kpackBuild: succeeded, rebuilt: rebuilt})
		Expect(p.conditions).To(HaveEach(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cfv1alpha1.NotARebuildReason),
			HaveField("Message", And(HavePrefix("CFBuild app-build-2 is marked as a rebuild, but kpack build app-build-2 makes CFBuild app-build-2 of app app,"),
				HaveSuffix("this is CFBuild app-build-2 of app victim, package victim-package, lineage \"first\", kpack build number \"2\", reasons \"BUILDPACK\": cf-hnc takes no droplet from it; delete it"))))))
		Expect(p.droplet).To(BeNil())
		Expect(p.rebuild).To(BeNil())

		p = planStaging(stagingInputs{build: DesiredRebuild(kb, &rebuilt[0]), space: &cfv1alpha1.CFSpace{}, following: kb.Name, kpackBuild: succeeded, rebuilt: rebuilt})
		Expect(p.droplet).To(HaveField("Registry.Image", succeeded.Status.LatestImage), "the rebuild that the kpack Build bears out")
		Expect(p.rebuild).NotTo(BeNil())
	})
})
