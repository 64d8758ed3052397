package v1alpha1_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

var _ = Describe("a build's state", func() {
	droplet := &cfv1alpha1.BuildDropletStatus{Registry: cfv1alpha1.Registry{Image: "registry.local/app@sha256:d1"}, Stack: "jammy"}
	build := func(generation int64, status metav1.ConditionStatus, observed int64, staged *cfv1alpha1.BuildDropletStatus) *cfv1alpha1.CFBuild {
		b := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Generation: generation}, Status: cfv1alpha1.CFBuildStatus{Droplet: staged}}
		if status != "" {
			b.Status.Conditions = []metav1.Condition{{Type: cfv1alpha1.SucceededCondition, Status: status, Reason: "Why", Message: "because", ObservedGeneration: observed}}
		}
		return b
	}

	// Before the rule was one, the CF API called a build STAGED whatever generation its
	// condition was written for, and kubectl cf and the staging reconciler did not; the CF API
	// and kubectl cf called a build STAGED that succeeded without a recorded droplet, whose
	// droplet then was not found (or made kubectl cf fail).
	DescribeTable("is STAGED only with a droplet staged for the build's current generation",
		func(b *cfv1alpha1.CFBuild, state cfv1alpha1.BuildState, hasDroplet, finished bool) {
			got, _ := b.State()
			Expect(got).To(Equal(state))
			Expect(b.StagedDroplet() != nil).To(Equal(hasDroplet))
			Expect(b.Finished()).To(Equal(finished))
		},
		Entry("no condition yet", build(1, "", 0, nil), cfv1alpha1.BuildStaging, false, false),
		Entry("waiting or building", build(1, metav1.ConditionUnknown, 1, nil), cfv1alpha1.BuildStaging, false, false),
		Entry("succeeded, with its droplet", build(1, metav1.ConditionTrue, 1, droplet), cfv1alpha1.BuildStaged, true, true),
		Entry("failed", build(1, metav1.ConditionFalse, 1, nil), cfv1alpha1.BuildFailed, false, true),
		Entry("succeeded for an earlier generation", build(2, metav1.ConditionTrue, 1, droplet), cfv1alpha1.BuildStaging, false, false),
		Entry("failed for an earlier generation", build(2, metav1.ConditionFalse, 1, nil), cfv1alpha1.BuildStaging, false, false),
		Entry("succeeded, the droplet not recorded", build(1, metav1.ConditionTrue, 1, nil), cfv1alpha1.BuildStaging, false, false),
	)

	It("gives the condition of a failed build, whose message says why", func() {
		_, c := build(1, metav1.ConditionFalse, 1, nil).State()
		Expect(c).To(HaveField("Message", "because"))
	})
})

var _ = Describe("a package", func() {
	It("is uploaded once its image is set", func() {
		pkg := &cfv1alpha1.CFPackage{}
		Expect(pkg.Uploaded()).To(BeFalse())
		pkg.Spec.Source.Registry.Image = "registry.local/packages/app@sha256:p1"
		Expect(pkg.Uploaded()).To(BeTrue())
	})
})

var _ = Describe("lifecycles", func() {
	It("are equal with the same type, stack and buildpacks in the same order", func() {
		l := cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle, Data: cfv1alpha1.LifecycleData{Stack: "s", Buildpacks: []string{"a", "b"}}}
		Expect(l.Equal(*l.DeepCopy())).To(BeTrue())
		other := *l.DeepCopy()
		other.Data.Buildpacks = []string{"b", "a"}
		Expect(l.Equal(other)).To(BeFalse())
		other = *l.DeepCopy()
		other.Data.Stack = "t"
		Expect(l.Equal(other)).To(BeFalse())
	})
})
