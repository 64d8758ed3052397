package e2e_test

import (
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// Every refusal says what is wrong and what would be accepted, and nothing else changes: the
// refused object does not exist afterwards, or is as it was.
var _ = Describe("Bad input", Ordered, func() {
	var org, space string

	BeforeAll(func(ctx SpecContext) {
		org = createOrg(ctx, "input-"+string(uuid.NewUUID())[:8])
		space = createSpace(ctx, org, "dev")
	})

	// refused creates obj and expects it refused with every message, and absent afterwards.
	refused := func(ctx SpecContext, c client.Client, obj client.Object, messages ...string) {
		GinkgoHelper()
		err := c.Create(ctx, obj)
		Expect(err).To(HaveOccurred())
		for _, m := range messages {
			Expect(err.Error()).To(ContainSubstring(m))
		}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(BeNotFound())
	}

	It("refuses orgs and spaces that cannot be made, saying what can", func(ctx SpecContext) {
		stray := newOrgObject("stray")
		stray.Namespace = "default"
		refused(ctx, k8s, stray, `orgs are created in the root namespace "cf"`)

		// An org's or a space's name names its namespace: only a GUID, so that no org manager can
		// claim a namespace that the cluster uses for something else. The CRD refuses it.
		for _, name := range []string{"istio-system", "with.dots", strings.ToUpper(string(uuid.NewUUID()))} {
			squatter := newOrgObject("squatter")
			squatter.Name = name
			refused(ctx, k8s, squatter, "a lowercase UUID (8-4-4-4-12 hexadecimal digits) such as 4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10")
		}
		monitoring := newSpaceObject(org, "monitoring")
		monitoring.Name = "monitoring"
		refused(ctx, k8s, monitoring, cfv1alpha1.ValidateNamespaceGUID(monitoring.Name))

		taken := newOrgObject(strings.ToUpper(orgName(ctx, org)))
		refused(ctx, k8s, taken, "Organization '"+taken.Spec.DisplayName+"' already exists.")

		refused(ctx, k8s, newSpaceObject(space, "nested"), "spaces are created in the namespace of their org; there is no org")
		refused(ctx, k8s, newSpaceObject(org, "DEV"), "Name must be unique per organization")
	})

	It("refuses apps and builds outside a space, where nothing stages or runs them", func(ctx SpecContext) {
		for _, namespace := range []string{"default", root, org} {
			app := newApp(namespace, defaultLifecycle)
			refused(ctx, k8s, app, namespace+" is not the namespace of a Cloud Foundry space")
		}
		build := &cfv1alpha1.CFBuild{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: "app"}, PackageRef: corev1.LocalObjectReference{Name: "pkg"},
				Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}},
		}
		refused(ctx, k8s, build, "default is not the namespace of a Cloud Foundry space")
		Expect(k8s.Create(ctx, newApp(space, defaultLifecycle))).To(Succeed(), "a space's namespace takes them")
	})

	It("refuses values outside what the API allows, naming the allowed ones", func(ctx SpecContext) {
		app := newApp(space, defaultLifecycle)
		app.Spec.DesiredState = "RUNNING"
		refused(ctx, k8s, app, `spec.desiredState: Unsupported value: "RUNNING": supported values: "STOPPED", "STARTED"`)

		// Bounded sizes: every CF object is cached by cf-hnc, so no field a tenant writes is unbounded.
		named := newApp(space, defaultLifecycle)
		named.Spec.DisplayName = strings.Repeat("n", 256)
		refused(ctx, k8s, named, "spec.displayName: Too long: may not be more than 255 bytes")
		refused(ctx, k8s, newApp(space, cfv1alpha1.LifecycleData{Buildpacks: slices.Repeat([]string{"cf-hnc/procfile"}, 21)}),
			"spec.lifecycle.data.buildpacks: Too many: 21: must have at most 20 items")
		refused(ctx, k8s, &cfv1alpha1.CFPackage{
			ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: "app"},
				Source: cfv1alpha1.PackageSource{Registry: cfv1alpha1.Registry{Image: "registry.local/" + strings.Repeat("p", 4096)}}},
		}, "spec.source.registry.image: Too long: may not be more than 4096 bytes")

		cfOrg := &cfv1alpha1.CFOrg{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: root, Name: org}, cfOrg)).To(Succeed())
		before := cfOrg.ResourceVersion
		cfOrg.Spec.BuildpackUpgradePolicy = "Sometimes"
		Expect(k8s.Update(ctx, cfOrg)).To(MatchError(ContainSubstring(`supported values: "Automatic", "Held"`)))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cfOrg), cfOrg)).To(Succeed())
		Expect(cfOrg.ResourceVersion).To(Equal(before))
	})

	It("refuses lifecycles that cannot be built, naming what can", func(ctx SpecContext) {
		docker := newApp(space, defaultLifecycle)
		docker.Spec.Lifecycle.Type = "docker"
		refused(ctx, k8s, docker, `spec.lifecycle.type: Unsupported value: "docker": supported values: "buildpack"`)
		refused(ctx, k8s, newApp(space, cfv1alpha1.LifecycleData{Stack: "cflinuxfs3"}),
			`spec.lifecycle.data.stack: Invalid value: "cflinuxfs3": unknown stack; the stacks are: cflinuxfs4`)
		refused(ctx, k8s, newApp(space, cfv1alpha1.LifecycleData{Buildpacks: []string{"ruby_buildpack"}}),
			`spec.lifecycle.data.buildpacks[0]: Invalid value: "ruby_buildpack": unknown buildpack; the store has: cf-hnc/procfile`)

		app := createApp(ctx, space, defaultLifecycle)
		build := newBuild(app, "package")
		build.Spec.Lifecycle.Data.Stack = "cflinuxfs3"
		refused(ctx, k8s, build, "unknown stack; the stacks are: cflinuxfs4")
	})

	It("refuses to change a build, and to mark one as a rebuild, saying what to do instead", func(ctx SpecContext) {
		app := createApp(ctx, space, defaultLifecycle)
		build := newBuild(app, "package")
		Expect(k8s.Create(ctx, build)).To(Succeed())
		original := build.DeepCopy()
		build.Spec.PackageRef.Name = "another"
		Expect(k8s.Patch(ctx, build, client.MergeFrom(original))).To(MatchError(ContainSubstring("a CFBuild's spec cannot change once created: create a new CFBuild to stage again")))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(build), build)).To(Succeed())
		Expect(build.Spec.PackageRef.Name).To(Equal("package"))

		dev := spaceDeveloper(ctx, "bob-"+string(uuid.NewUUID())[:8], space)
		forged := newBuild(app, "package")
		forged.Labels = map[string]string{cfv1alpha1.RebuildOfLabel: build.Name}
		refused(ctx, dev, forged, "only cf-hnc marks a CFBuild as a rebuild: leave out the labels")
	})

	It("refuses a tenant's build configuration, saying what it may do instead", func(ctx SpecContext) {
		dev := spaceDeveloper(ctx, "carol-"+string(uuid.NewUUID())[:8], space)
		refused(ctx, dev, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "cf-build-org"}},
			"only a platform operator may use the names cf-registry-* and cf-build-*", "choose another name, or leave the label out")
		refused(ctx, dev, registrySecret(space, "mine", org),
			"only a platform operator may place build configuration (the label workloads.cloudfoundry.org/build-config)")
	})
})

func newOrgObject(displayName string) *cfv1alpha1.CFOrg {
	return &cfv1alpha1.CFOrg{
		ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: string(uuid.NewUUID())},
		Spec:       cfv1alpha1.CFOrgSpec{DisplayName: displayName},
	}
}

func orgName(ctx SpecContext, guid string) string {
	GinkgoHelper()
	o := &cfv1alpha1.CFOrg{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: root, Name: guid}, o)).To(Succeed())
	return o.Spec.DisplayName
}
