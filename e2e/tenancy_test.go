package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
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
	"code.cloudfoundry.org/cf-hnc/internal/dockerconfig"
	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
	"code.cloudfoundry.org/cf-hnc/internal/install"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// The tenancy specs act as a CF space developer of org A, with exactly the rights of the
// cf-space-developer role in one space and of cf-org-user in its org, which Cloud Foundry gives
// every member of a space (config/rbac/cf_roles.yaml), against the real apiserver, HNC, kpack
// and cf-hnc's admission policies, and try every way out of that space.
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
		Expect(dev.Delete(ctx, copied)).To(BeForbidden(), "cf-hnc-build-config keeps it, and HNC's webhook guards its copies")
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
		Entry("a token Secret of the org's build ServiceAccount, which would act as it", func(space string) client.Object {
			return &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "my-token",
					Annotations: map[string]string{corev1.ServiceAccountNameKey: "cf-build-org"}},
				Type: corev1.SecretTypeServiceAccountToken,
			}
		}, "only a platform operator may make a token for the build ServiceAccount cf-build-org"),
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
		By("scaling, which is the space developer's, while the process reconciler writes the new process's status")
		testenv.Update(ctx, dev, web, func() { web.Spec.Instances = 2 })

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

// The org manager specs act as a CF org manager, with exactly the cf-org-manager role in its
// org's namespace, which HNC copies into every space of the org.
var _ = Describe("An org manager", Ordered, func() {
	var (
		org, space, user string
		manager          client.Client
	)

	BeforeAll(func(ctx SpecContext) {
		org = createOrg(ctx, "managed-"+string(uuid.NewUUID())[:8])
		space = createSpace(ctx, org, "dev")
		user = "olivia-" + string(uuid.NewUUID())[:8]
		manager = orgManager(ctx, user, org)
	})

	It("grants the org roles in its org, which HNC copies into every space, and the space roles in a space", func(ctx SpecContext) {
		orgUser := roleBinding(org, "oscar-"+string(uuid.NewUUID())[:8], "cf-org-user")
		Expect(manager.Create(ctx, orgUser)).To(Succeed())
		copied := client.ObjectKey{Namespace: space, Name: orgUser.Name}
		Eventually(func() error { return k8s.Get(ctx, copied, &rbacv1.RoleBinding{}) }).Should(Succeed(), "HNC copies the org role into the space")
		Expect(manager.Delete(ctx, orgUser)).To(Succeed(), "and revokes it")

		developer := roleBinding(space, "sam-"+string(uuid.NewUUID())[:8], "cf-space-developer")
		Eventually(func() error { return manager.Create(ctx, developer) }).Should(Succeed(),
			"the space role in the space, once HNC has copied the manager's own role there")
	})

	It("cannot give itself a space role in the org namespace, where it would write Secrets and ServiceAccounts above the spaces", func(ctx SpecContext) {
		for _, role := range []string{"cf-space-developer", "cf-space-manager", "cf-space-auditor"} {
			binding := roleBinding(org, user, role)
			Expect(manager.Create(ctx, binding)).To(And(BeForbidden(),
				MatchError(ContainSubstring("an org manager may bind only the org roles cf-org-manager and cf-org-user here"))), role)
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(binding), binding)).To(BeNotFound(), role)
		}
	})

	It("writes no Secret, ServiceAccount or RoleBinding above the spaces, even with a space role bound in the org before the policy", func(ctx SpecContext) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "mine"}}
		Expect(manager.Create(ctx, secret)).To(BeForbidden(), "no CF role of an org writes Secrets")

		// As a binding made before the policy, or Kubernetes' edit role granted there, would.
		bindRole(ctx, org, user, "cf-space-developer")
		Eventually(func() error { return manager.List(ctx, &corev1.SecretList{}, client.InNamespace(org)) }).Should(Succeed())
		writesAboveSpaces := ContainSubstring("only a platform operator writes Secrets and ServiceAccounts above the spaces")
		Expect(manager.Create(ctx, secret)).To(And(BeForbidden(), MatchError(writesAboveSpaces)))
		Expect(manager.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "mine"}})).
			To(And(BeForbidden(), MatchError(writesAboveSpaces)))
		Expect(manager.Create(ctx, roleBinding(org, "sam-"+string(uuid.NewUUID())[:8], "cf-space-auditor"))).To(BeForbidden())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(BeNotFound())
	})

	It("finds a space of its org by the space's namespace with kubectl cf", func(ctx SpecContext) {
		Eventually(func() error { return manager.List(ctx, &cfv1alpha1.CFAppList{}, client.InNamespace(space)) }).Should(Succeed(),
			"HNC has copied the org role into the space")
		Expect(cf("apps", "-n", space, "--as", user)).To(ContainSubstring("NAME"))
	})
})

// What a user without a CF role may read of the tree (nothing), and what a CF role adds: kubectl
// cf finds a space from its namespace, that namespace's org label, the org's namespace (for the
// org's name) and the CFSpace.
var _ = Describe("Finding orgs and spaces", func() {
	var org, space string

	BeforeEach(func(ctx SpecContext) {
		org = createOrg(ctx, "found-"+string(uuid.NewUUID())[:8])
		space = createSpace(ctx, org, "dev")
	})

	It("lets a user without a CF role read nothing of the tree or the cluster, not even an org by its GUID", func(ctx SpecContext) {
		stranger := actingAs("stranger-" + string(uuid.NewUUID())[:8])
		Expect(stranger.Get(ctx, client.ObjectKey{Namespace: root, Name: org}, &cfv1alpha1.CFOrg{})).To(BeForbidden())
		Expect(stranger.List(ctx, &cfv1alpha1.CFOrgList{}, client.InNamespace(root))).To(BeForbidden())
		Expect(stranger.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, &cfv1alpha1.CFSpace{})).To(BeForbidden())
		for _, ns := range []string{root, org, space, "default", "kube-system"} {
			Expect(stranger.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})).To(BeForbidden(), ns)
		}
		Expect(stranger.List(ctx, &corev1.NamespaceList{})).To(BeForbidden())
	})

	It("lets a member read the namespaces and spaces of its org, and no other namespace", func(ctx SpecContext) {
		other := createSpace(ctx, org, "prod")
		otherOrg := createOrg(ctx, "foreign-"+string(uuid.NewUUID())[:8])
		foreign := createSpace(ctx, otherOrg, "dev")
		dev := spaceDeveloper(ctx, "dana-"+string(uuid.NewUUID())[:8], space)

		for _, ns := range []string{space, org, other} {
			Eventually(func() error { return dev.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}) }).Should(Succeed(),
				"%s: its space role there, or its org role in the org and HNC's copies of it", ns)
		}
		for _, ns := range []string{root, otherOrg, foreign, "default", "kube-system"} {
			Expect(dev.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})).To(BeForbidden(), ns)
		}
		Expect(dev.Get(ctx, client.ObjectKey{Namespace: org, Name: other}, &cfv1alpha1.CFSpace{})).To(Succeed())
		Expect(dev.Get(ctx, client.ObjectKey{Namespace: otherOrg, Name: foreign}, &cfv1alpha1.CFSpace{})).To(BeForbidden())
	})

	It("tells a space developer without a role in the org to ask for one", func(ctx SpecContext) {
		user := "solo-" + string(uuid.NewUUID())[:8]
		onlySpaceDeveloper(ctx, user, space)
		Expect(cfFails("apps", "-n", space, "--as", user)).To(ContainSubstring(
			"reading it takes a role in its org, which every member of a space holds in Cloud Foundry: ask an org manager to bind cf-org-user to you in namespace %s", org))
	})
})

// What operators place above the spaces, HNC copies into every space: no tenant may take its
// name first in a space.
var _ = Describe("Build configuration above the spaces", func() {
	It("is named with a reserved prefix, which no tenant may use in a space", func(ctx SpecContext) {
		org := createOrg(ctx, "prefixed-"+string(uuid.NewUUID())[:8])
		space := createSpace(ctx, org, "dev")
		reserved := ContainSubstring("must be named cf-registry-* or cf-build-*, names that no tenant may use")

		Expect(k8s.Create(ctx, registrySecret(org, "builder-pull", org))).To(And(BeForbidden(), MatchError(reserved)),
			"ADR 6's pull-only credential, under a name that a tenant could squat in any space")
		buildServiceAccount := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: "builds", Labels: buildConfig}}
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, buildServiceAccount))).To(Succeed())
		})
		Expect(k8s.Create(ctx, buildServiceAccount)).To(And(BeForbidden(), MatchError(reserved)))

		Expect(k8s.Create(ctx, registrySecret(org, "cf-registry-pull", org))).To(Succeed())
		Expect(k8s.Create(ctx, registrySecret(space, "pull", org))).To(Succeed(), "a space has no space below it")
	})
})

// Registry isolation between the spaces of one org is the operator's choice: the org's
// credential reaches every space's repository; an account per space (set-registry ORG SPACE)
// reaches only its own. Here the org places only the droplet repository, with an account that may
// push and pull nowhere, and each space its own account. Since per-space registries the org need
// place nothing (e2e "A space with a registry of its own").
var _ = Describe("Registry isolation between the spaces of an org", Ordered, func() {
	var (
		org, spaceA, spaceB, user string
		host                      string
		dev                       client.Client
	)

	BeforeAll(func(ctx SpecContext) {
		org = createOrg(ctx, "isolated-"+string(uuid.NewUUID())[:8])
		spaceA, spaceB = createSpace(ctx, org, "a"), createSpace(ctx, org, "b")
		host = cp.Kpack().Registry.Host()
		nobody := registry.User{Name: "nobody-" + org, Password: string(uuid.NewUUID())}
		Expect(cp.Kpack().Registry.AddUser(nobody)).To(Succeed())
		cf("set-registry", org, "--server", host, "--username", nobody.Name, "--password", nobody.Password, "--droplet-repository", host+"/"+org)
		for _, space := range []string{spaceA, spaceB} {
			registryUser(org + "/" + space)
			account, password := registryCredentials(org + "/" + space)
			cf("set-registry", org, space, "--server", host, "--username", account, "--password", password)
			Eventually(func() []cfv1alpha1.RegistryCredential {
				s := &cfv1alpha1.CFSpace{}
				Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, s)).To(Succeed())
				Expect(s.Status.Build).NotTo(BeNil())
				return s.Status.Build.RegistryCredentials
			}).Should(ConsistOf(cfv1alpha1.RegistryCredential{Registry: host, Secret: cfv1alpha1.PlacedObject{Name: "cf-registry-space", From: space}}))
			Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
		}
		user = "ada-" + string(uuid.NewUUID())[:8]
		dev = spaceDeveloper(ctx, user, spaceA)
	})

	// dropletOf pushes an app to a space with kubectl cf, as user unless empty, and returns its droplet.
	dropletOf := func(ctx SpecContext, space, user string) string {
		GinkgoHelper()
		args := []string{"push", "web", "-n", space, "-p", appSource(), "--no-start"}
		if user != "" {
			args = append(args, "--as", user)
		}
		cf(args...)
		apps := &cfv1alpha1.CFAppList{}
		Expect(k8s.List(ctx, apps, client.InNamespace(space))).To(Succeed())
		Expect(apps.Items).To(HaveLen(1))
		return getBuild(ctx, space, apps.Items[0].Spec.CurrentDropletRef.Name).Status.Droplet.Registry.Image
	}

	It("gives a developer of one space, with every credential in its space, no access to another space's droplets", func(ctx SpecContext) {
		own, other := dropletOf(ctx, spaceA, user), dropletOf(ctx, spaceB, "")
		Expect(own).To(HavePrefix(host + "/" + org + "/" + spaceA + "/"))
		pusher, ok := cp.Kpack().Registry.PushedBy(own)
		Expect(ok).To(BeTrue())
		Expect(pusher).To(Equal(registryUserName(org+"/"+spaceA)), "pushed with the space's own account")
		Expect(other).To(HavePrefix(host + "/" + org + "/" + spaceB + "/"))

		secrets := &corev1.SecretList{}
		Expect(dev.List(ctx, secrets, client.InNamespace(spaceA))).To(Succeed())
		var tried []string
		for i := range secrets.Items {
			creds, err := dockerconfig.Parse(&secrets.Items[i])
			credential, forHost := creds[host]
			if err != nil || !forHost {
				continue
			}
			secretName, auth := secrets.Items[i].Name, remote.WithAuth(authn.FromConfig(credential))
			tried = append(tried, secretName)
			Expect(pull(other, auth)).To(BeDeniedByTheRegistry(), "%s pulls space b's droplet", secretName)
			Expect(pushTo(host+"/"+org+"/"+spaceB+"/planted:latest", auth)).To(BeDeniedByTheRegistry(), "%s pushes into space b", secretName)
			Expect(pushTo(host+"/"+org+"/planted:latest", auth)).To(BeDeniedByTheRegistry(), "%s pushes above the spaces", secretName)
			if secretName == "cf-registry-space" {
				Expect(pull(own, auth)).To(Succeed(), "the space's account reads the space's droplets")
			}
		}
		Expect(tried).To(ConsistOf("cf-registry-org", "cf-registry-space"), "the org's copy and the space's own")
	})

	It("cannot remove the build configuration an operator placed in its space", func(ctx SpecContext) {
		deleting := ContainSubstring("only a platform operator may delete the build configuration that an operator placed")
		Expect(dev.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: spaceA, Name: "cf-registry-space"}})).
			To(And(BeForbidden(), MatchError(deleting)))
		Expect(dev.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: spaceA, Name: "cf-build-space"}})).
			To(And(BeForbidden(), MatchError(deleting)))
		mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: spaceA, Name: "mine"}}
		Expect(dev.Create(ctx, mine)).To(Succeed())
		Expect(dev.Delete(ctx, mine)).To(Succeed(), "its own Secrets are the space developer's")
	})
})

// pull reads an image's manifest and configuration.
func pull(ref string, auth remote.Option) error {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	img, err := remote.Image(parsed, auth)
	if err != nil {
		return err
	}
	_, err = img.ConfigFile()
	return err
}

// pushTo pushes a small random image.
func pushTo(ref string, auth remote.Option) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	img, err := random.Image(64, 1)
	if err != nil {
		return err
	}
	return remote.Write(tag, img, auth)
}

// BeDeniedByTheRegistry matches the registry's refusal of a credential: 401 or 403.
func BeDeniedByTheRegistry() OmegaMatcher {
	return WithTransform(func(err error) int {
		var refused *transport.Error
		if errors.As(err, &refused) {
			return refused.StatusCode
		}
		return 0
	}, BeElementOf(http.StatusUnauthorized, http.StatusForbidden))
}

// spaceDeveloper makes a user a developer of a space, as a space manager would, and a user of
// the space's org, as Cloud Foundry makes every member of a space (kubectl cf reads the CFSpace
// in the org's namespace), and returns a client that acts as that user.
func spaceDeveloper(ctx context.Context, user, space string) client.Client {
	GinkgoHelper()
	org := orgOf(ctx, space)
	bindRole(ctx, org, user, "cf-org-user")
	dev := onlySpaceDeveloper(ctx, user, space)
	Eventually(func() error {
		return dev.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, &cfv1alpha1.CFSpace{})
	}).Should(Succeed())
	return dev
}

// onlySpaceDeveloper binds a user to the cf-space-developer role in a space and to nothing else,
// and returns a client that acts as that user.
func onlySpaceDeveloper(ctx context.Context, user, space string) client.Client {
	GinkgoHelper()
	bindRole(ctx, space, user, "cf-space-developer")
	dev := actingAs(user)
	// The role's rules come from the aggregation controller, a moment after the role exists.
	Eventually(func() error { return dev.List(ctx, &cfv1alpha1.CFAppList{}, client.InNamespace(space)) }).Should(Succeed())
	return dev
}

// orgManager binds a user to the cf-org-manager role in an org, as an operator would, and
// returns a client that acts as that user.
func orgManager(ctx context.Context, user, org string) client.Client {
	GinkgoHelper()
	bindRole(ctx, org, user, "cf-org-manager")
	manager := actingAs(user)
	Eventually(func() error { return manager.List(ctx, &cfv1alpha1.CFSpaceList{}, client.InNamespace(org)) }).Should(Succeed())
	return manager
}

// bindRole binds a ClusterRole to a user in a namespace, as an administrator.
func bindRole(ctx context.Context, namespace, user, role string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, roleBinding(namespace, user, role))).To(Succeed())
}

func roleBinding(namespace, user, role string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: role + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
}

// actingAs returns a client that acts as an authenticated user in no group of its own.
func actingAs(user string) client.Client {
	GinkgoHelper()
	config := rest.CopyConfig(cp.Config)
	config.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(config, client.Options{Scheme: cfscheme.New()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// orgOf is the org of a space namespace, from the label HNC puts on it.
func orgOf(ctx context.Context, space string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{}
	Eventually(func() string {
		Expect(k8s.Get(ctx, client.ObjectKey{Name: space}, ns)).To(Succeed())
		return ns.Labels[cfv1alpha1.OrgGUIDLabel]
	}).ShouldNot(BeEmpty())
	return ns.Labels[cfv1alpha1.OrgGUIDLabel]
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
