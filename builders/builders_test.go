package builders

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
)

func TestBuilders(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "builders (unit)")
}

var (
	defaultBuilder = cftest.DefaultBuilder()
	space          = cftest.BuildConfig()
)

var _ = Describe("lifecycles", func() {
	lifecycle := func(stack string, buildpacks ...string) cfv1alpha1.LifecycleData {
		return cfv1alpha1.LifecycleData{Stack: stack, Buildpacks: buildpacks}
	}

	It("takes the build's lifecycle over the app's", func() {
		app := &cfv1alpha1.CFApp{Spec: cfv1alpha1.CFAppSpec{Lifecycle: cfv1alpha1.Lifecycle{Data: lifecycle("", "a")}}}
		build := &cfv1alpha1.CFBuild{}
		Expect(EffectiveLifecycle(build, app)).To(Equal(lifecycle("", "a")))
		build.Spec.Lifecycle.Data = lifecycle("", "b")
		Expect(EffectiveLifecycle(build, app)).To(Equal(lifecycle("", "b")))
	})

	DescribeTable("uses the default Builder only for a lifecycle that names nothing of its own",
		func(l cfv1alpha1.LifecycleData, usesDefault bool) {
			Expect(UsesDefaultBuilder(l, defaultBuilder)).To(Equal(usesDefault))
		},
		Entry("nothing named", lifecycle(""), true),
		Entry("the default's own stack", lifecycle("cflinuxfs4"), true),
		Entry("another stack", lifecycle("cflinuxfs5"), false),
		Entry("buildpacks", lifecycle("", "paketo-buildpacks/go"), false),
	)

	It("names a dedicated Builder after the lifecycle: same stack and buildpacks, same name", func() {
		a := DedicatedBuilderName(lifecycle("", "x", "y"), defaultBuilder)
		Expect(a).To(HavePrefix("cf-lifecycle-"))
		Expect(DedicatedBuilderName(lifecycle("cflinuxfs4", "x", "y"), defaultBuilder)).To(Equal(a))
		Expect(DedicatedBuilderName(lifecycle("", "y", "x"), defaultBuilder)).NotTo(Equal(a))
		Expect(DedicatedBuilderName(lifecycle("", "xy"), defaultBuilder)).NotTo(Equal(a))
		Expect(DedicatedBuilderName(lifecycle("cflinuxfs5", "x", "y"), defaultBuilder)).NotTo(Equal(a))
	})

	It("makes a dedicated Builder from the default's store and lifecycle, with the buildpacks required in order", func() {
		b := DesiredDedicatedBuilder("space-1", lifecycle("cflinuxfs5", "paketo-buildpacks/nodejs", "paketo-buildpacks/procfile"), defaultBuilder, space)
		Expect(b.Namespace).To(Equal("space-1"))
		Expect(b.Labels).To(HaveKeyWithValue(cfv1alpha1.DedicatedBuilderLabel, "true"))
		Expect(b.Spec.Tag).To(Equal("registry.local/org-a/builders/" + b.Name))
		Expect(b.Spec.ServiceAccountName).To(Equal("cf-build-org"))
		Expect(b.Spec.Store).To(Equal(defaultBuilder.Spec.Store))
		Expect(b.Spec.Lifecycle).To(Equal(defaultBuilder.Spec.Lifecycle))
		Expect(b.Spec.Stack).To(Equal(corev1.ObjectReference{Kind: kpackv1alpha2.ClusterStackKind, Name: "cflinuxfs5"}))
		Expect(b.Spec.Order).To(HaveLen(1))
		Expect(b.Spec.Order[0].Group).To(HaveExactElements(
			HaveField("BuildpackRef", corev1alpha1.BuildpackRef{BuildpackInfo: corev1alpha1.BuildpackInfo{Id: "paketo-buildpacks/nodejs"}}),
			HaveField("BuildpackRef", corev1alpha1.BuildpackRef{BuildpackInfo: corev1alpha1.BuildpackInfo{Id: "paketo-buildpacks/procfile"}}),
		))
	})

	It("keeps the default's buildpacks for a lifecycle that names only a stack", func() {
		b := DesiredDedicatedBuilder("space-1", lifecycle("cflinuxfs5"), defaultBuilder, space)
		Expect(b.Spec.Order).To(Equal(defaultBuilder.Spec.Order))
	})
})
