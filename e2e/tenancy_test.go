package e2e_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/install"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// The tenancy specs act as a CF space developer of org A, with exactly the rights of the
// cf-space-developer role in one space (config/rbac/cf_roles.yaml), against the real
// apiserver, HNC, kpack and cf-hnc's admission policies, and try every way out of that space.
var _ = Describe("A space developer", Ordered, func() {
	var (
		orgA, spaceA, otherSpaceA, orgB, spaceB string
		dev                                     client.Client
	)

	BeforeAll(func(ctx SpecContext) {
		orgA, orgB = createOrg(ctx, "tenant-a-"+string(uuid.NewUUID())[:8]), createOrg(ctx, "tenant-b-"+string(uuid.NewUUID())[:8])
		spaceA, otherSpaceA, spaceB = createSpace(ctx, orgA, "dev"), createSpace(ctx, orgA, "prod"), createSpace(ctx, orgB, "dev")
		placeOrgRegistry(ctx, orgA)
		placeOrgRegistry(ctx, orgB)
		for org, space := range map[string]string{orgA: spaceA, orgB: spaceB} {
			Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
		}
		dev = spaceDeveloper(ctx, "alice-"+string(uuid.NewUUID())[:8], spaceA)
	})

	It("pushes and stages an app in its space, with the org's credentials, below the space's repository", func(ctx SpecContext) {
		app := newApp(spaceA, defaultLifecycle)
		Expect(dev.Create(ctx, app)).To(Succeed())
		build := stageAs(ctx, dev, orgA, app, uploadSource(orgA, staticSource))
		Eventually(succeeded(ctx, build)).Should(HaveField("Status", metav1.ConditionTrue))
		Expect(build.Status.Droplet.Registry.Image).To(HavePrefix(cp.Kpack().Registry.Host() + "/" + orgA + "/" + spaceA + "/" + app.Name + "@"))
	})

	It("reads no Secret outside its space, and cannot change the copies of the org's", func(ctx SpecContext) {
		for _, ns := range []string{orgA, otherSpaceA, orgB, spaceB, root} {
			Expect(dev.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cf-registry-org"}, &corev1.Secret{})).To(BeForbidden(), ns)
			Expect(dev.List(ctx, &corev1.SecretList{}, client.InNamespace(ns))).To(BeForbidden(), ns)
		}
		copied := &corev1.Secret{}
		Expect(dev.Get(ctx, client.ObjectKey{Namespace: spaceA, Name: "cf-registry-org"}, copied)).To(Succeed(), "the space's builds use it")
		original := copied.DeepCopy()
		copied.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"evil.example":{"auth":"eDp5"}}}`)
		Expect(dev.Update(ctx, copied)).To(BeForbidden())
		Expect(dev.Delete(ctx, copied)).To(MatchError(ContainSubstring("hnc.x-k8s.io")), "HNC's webhook guards its copies")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(copied), copied)).To(Succeed())
		Expect(copied.Data).To(Equal(original.Data))
	})

	DescribeTable("cannot place build configuration of its own in its space",
		func(ctx SpecContext, obj func(space string) client.Object, message string) {
			err := dev.Create(ctx, obj(spaceA))
			Expect(err).To(BeForbidden())
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("a labelled Secret that aims the space's droplets at another org's repository", func(space string) client.Object {
			s := registrySecret(space, "my-registry", orgB)
			s.Annotations = map[string]string{cfv1alpha1.DropletRepositoryPrefixAnnotation: cp.Kpack().Registry.Host() + "/" + orgB}
			return s
		}, "only a platform operator may place build configuration"),
		Entry("a labelled build ServiceAccount", func(space string) client.Object {
			return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "my-build", Labels: buildConfig}}
		}, "only a platform operator may place build configuration"),
		Entry("a Secret with the name of the org's credentials (squatting a name propagated later)", func(space string) client.Object {
			s := registrySecret(space, "cf-registry-org", orgA)
			delete(s.Labels, cfv1alpha1.BuildConfigLabel)
			return s
		}, "reserved for the build configuration an operator places"),
		Entry("a ServiceAccount with the name of the root's build ServiceAccount", func(space string) client.Object {
			return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "cf-build-root"}}
		}, "reserved for the build configuration an operator places"),
	)

	It("cannot label a Secret of its own as build configuration afterwards", func(ctx SpecContext) {
		s := registrySecret(spaceA, "plain", orgA)
		delete(s.Labels, cfv1alpha1.BuildConfigLabel)
		Expect(dev.Create(ctx, s)).To(Succeed(), "plain Secrets are the space developer's own")
		s.Labels = map[string]string{cfv1alpha1.BuildConfigLabel: "true"}
		Expect(dev.Update(ctx, s)).To(And(BeForbidden(), MatchError(ContainSubstring("only a platform operator"))))
	})

	It("cannot make a kpack Builder, Image or Build, nor grant itself a role", func(ctx SpecContext) {
		builder := cp.Kpack().Builder(spaceA, "mine", "cf-build-org", "evil.example/builder")
		Expect(dev.Create(ctx, builder)).To(BeForbidden())
		Expect(dev.Create(ctx, &kpackv1alpha2.Image{ObjectMeta: metav1.ObjectMeta{Namespace: spaceA, Name: "mine"},
			Spec: kpackv1alpha2.ImageSpec{Tag: "evil.example/app"}})).To(BeForbidden())
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: spaceA, Name: "escalate"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
		}
		Expect(dev.Create(ctx, binding)).To(BeForbidden())
		Expect(dev.Create(ctx, newSpaceObject(orgA, "mine"))).To(BeForbidden())
	})

	It("scales its apps' processes, but runs no workload of its own and reaches no other space's processes", func(ctx SpecContext) {
		app := newApp(spaceA, defaultLifecycle)
		Expect(dev.Create(ctx, app)).To(Succeed())
		web := webProcess(ctx, app)
		Expect(dev.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		web.Spec.Instances = 2
		Expect(dev.Update(ctx, web)).To(Succeed(), "scaling is the space developer's")

		workload := func(name string) (*appsv1.StatefulSet, *corev1.Pod) {
			labels := map[string]string{"app": name}
			pod := corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "evil.example/miner"}}}
			return &appsv1.StatefulSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: spaceA, Name: name},
				Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod}},
			}, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: spaceA, Name: name, Labels: labels}, Spec: pod}
		}
		statefulSet, pod := workload("mine")
		Expect(dev.Create(ctx, statefulSet)).To(BeForbidden(), "instances run only from droplets, through cf-hnc")
		Expect(dev.Create(ctx, pod)).To(BeForbidden())

		other := newApp(spaceB, defaultLifecycle)
		Expect(k8s.Create(ctx, other)).To(Succeed())
		otherWeb := webProcess(ctx, other)
		Expect(dev.Get(ctx, client.ObjectKeyFromObject(otherWeb), &cfv1alpha1.CFProcess{})).To(BeForbidden())
		otherWeb.Spec.Instances = 0
		Expect(dev.Update(ctx, otherWeb)).To(BeForbidden())
	})

	It("cannot pose a build as a rebuild to move an app past the org's Held policy", func(ctx SpecContext) {
		app := newApp(spaceA, defaultLifecycle)
		Expect(dev.Create(ctx, app)).To(Succeed())
		for _, forged := range []func(*cfv1alpha1.CFBuild){
			func(b *cfv1alpha1.CFBuild) { b.Labels = map[string]string{cfv1alpha1.RebuildOfLabel: "x"} },
			func(b *cfv1alpha1.CFBuild) { b.Labels = map[string]string{cfv1alpha1.KpackBuildLabel: "x"} },
			func(b *cfv1alpha1.CFBuild) { b.Labels = map[string]string{cfv1alpha1.KpackBuildNumberLabel: "9"} },
			func(b *cfv1alpha1.CFBuild) {
				b.Annotations = map[string]string{cfv1alpha1.RebuildReasonAnnotation: "STACK"}
			},
		} {
			build := newBuild(app, "package")
			forged(build)
			Expect(dev.Create(ctx, build)).To(And(BeForbidden(), MatchError(ContainSubstring("only cf-hnc marks a CFBuild as a rebuild"))))
		}
		build := newBuild(app, "package")
		Expect(dev.Create(ctx, build)).To(Succeed())
		unmarked := build.DeepCopy()
		build.Labels = map[string]string{cfv1alpha1.RebuildOfLabel: "x"}
		Expect(dev.Patch(ctx, build, client.MergeFrom(unmarked))).To(BeForbidden(), "nor mark one afterwards")
	})

	It("cannot change what a build stages once it is created", func(ctx SpecContext) {
		app := newApp(spaceA, defaultLifecycle)
		Expect(dev.Create(ctx, app)).To(Succeed())
		build := newBuild(app, "package")
		Expect(dev.Create(ctx, build)).To(Succeed())
		original := build.DeepCopy()
		build.Spec.PackageRef.Name = "another-package"
		Expect(dev.Patch(ctx, build, client.MergeFrom(original))).To(MatchError(ContainSubstring("a CFBuild's spec cannot change once created")))
	})

	It("cannot stage another org's source: builds run as the space's ServiceAccount, whose credentials cannot read it", func(ctx SpecContext) {
		app := newApp(spaceA, defaultLifecycle)
		Expect(dev.Create(ctx, app)).To(Succeed())
		// The package names org B's source, which only org B's credentials may read.
		build := stageAs(ctx, dev, orgA, app, uploadSource(orgB, staticSource))
		Eventually(succeeded(ctx, build)).Should(HaveField("Status", metav1.ConditionFalse))
		Expect(build.Status.Droplet).To(BeNil())
		image := &kpackv1alpha2.Image{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: spaceA, Name: app.Name}, image)).To(Succeed())
		Expect(image.Spec.ServiceAccountName).To(Equal("cf-build-org"))
		Expect(image.Spec.Tag).To(HavePrefix(cp.Kpack().Registry.Host() + "/" + orgA + "/" + spaceA + "/"))
	})

	It("is told what is wrong with a name, and nothing is created", func(ctx SpecContext) {
		for _, name := range []string{strings.Repeat("a", 64), "with.dots"} {
			app := newApp(spaceA, defaultLifecycle)
			app.Name = name
			Expect(dev.Create(ctx, app)).To(MatchError(ContainSubstring(cfv1alpha1.ValidateGUID(name))), name)
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), app)).To(BeNotFound())
		}
	})
})

// spaceDeveloper binds a user to the cf-space-developer role in a space, as a space manager
// would, and returns a client that acts as that user.
func spaceDeveloper(ctx context.Context, user, space string) client.Client {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "space-developer-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cf-space-developer"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})).To(Succeed())
	config := rest.CopyConfig(cp.Config)
	config.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(config, client.Options{Scheme: cfscheme.New()})
	Expect(err).NotTo(HaveOccurred())
	// The role's rules come from the aggregation controller, a moment after the role exists.
	Eventually(func() error { return c.List(ctx, &cfv1alpha1.CFAppList{}, client.InNamespace(space)) }).Should(Succeed())
	return c
}

func registrySecret(namespace, name, registryUserOf string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{cfv1alpha1.BuildConfigLabel: "true"}},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: registryUser(registryUserOf)},
	}
}

func newSpaceObject(org, name string) *cfv1alpha1.CFSpace {
	return &cfv1alpha1.CFSpace{
		ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: string(uuid.NewUUID())},
		Spec:       cfv1alpha1.CFSpaceSpec{DisplayName: name},
	}
}

func newBuild(app *cfv1alpha1.CFApp, pkg string) *cfv1alpha1.CFBuild {
	return &cfv1alpha1.CFBuild{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFBuildSpec{
			AppRef:     corev1.LocalObjectReference{Name: app.Name},
			PackageRef: corev1.LocalObjectReference{Name: pkg},
			Lifecycle:  cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle},
		},
	}
}

// stageAs creates a package of a source image and a build of it, as c.
func stageAs(ctx SpecContext, c client.Client, org string, app *cfv1alpha1.CFApp, source string) *cfv1alpha1.CFBuild {
	GinkgoHelper()
	pkg := &cfv1alpha1.CFPackage{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFPackageSpec{
			Type:   cfv1alpha1.BitsPackage,
			AppRef: corev1.LocalObjectReference{Name: app.Name},
			Source: cfv1alpha1.PackageSource{Registry: cfv1alpha1.Registry{
				Image: source, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "cf-registry-org"}},
			}},
		},
	}
	Expect(c.Create(ctx, pkg)).To(Succeed())
	build := newBuild(app, pkg.Name)
	Expect(c.Create(ctx, build)).To(Succeed())
	return build
}

// BeForbidden matches a Forbidden error.
func BeForbidden() OmegaMatcher {
	return WithTransform(apierrors.IsForbidden, BeTrue())
}

var _ = Describe("cf-hnc's manager", func() {
	It("writes nothing outside the CF tree, whatever its ClusterRole allows", func(ctx SpecContext) {
		config := rest.CopyConfig(cp.Config)
		config.Impersonate = rest.ImpersonationConfig{
			UserName: "system:serviceaccount:" + install.Namespace + ":" + install.ServiceAccount,
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + install.Namespace, "system:authenticated"},
		}
		manager, err := client.New(config, client.Options{Scheme: cfscheme.New()})
		Expect(err).NotTo(HaveOccurred())
		outside := &corev1.Namespace{}
		Expect(manager.Get(ctx, client.ObjectKey{Name: "default"}, outside)).To(Succeed(), "its ClusterRole lets it read namespaces")
		original := outside.DeepCopy()
		outside.Labels["workloads.cloudfoundry.org/org-guid"] = "taken-over"
		Expect(manager.Patch(ctx, outside, client.MergeFrom(original))).To(BeForbidden(), "it writes no namespace: HNC labels them")
		serviceAccount := &corev1.ServiceAccount{}
		Expect(manager.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, serviceAccount)).To(Succeed())
		before := serviceAccount.DeepCopy()
		serviceAccount.ImagePullSecrets = append(serviceAccount.ImagePullSecrets, corev1.LocalObjectReference{Name: "planted"})
		Expect(manager.Patch(ctx, serviceAccount, client.MergeFrom(before))).To(And(BeForbidden(),
			MatchError(ContainSubstring("cf-hnc writes only in the CF tree"))), "its ClusterRole lets it patch ServiceAccounts")
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "planted"}}
		Expect(manager.Create(ctx, secret)).To(HaveOccurred())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(BeNotFound())
		workload := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "planted"},
			Spec: appsv1.StatefulSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "planted"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "planted"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "planted", Image: "planted"}}},
				},
			},
		}
		Expect(manager.Create(ctx, workload)).To(And(BeForbidden(), MatchError(ContainSubstring("cf-hnc writes only in the CF tree"))),
			"its ClusterRole lets it create the StatefulSets that run apps")
	})
})
