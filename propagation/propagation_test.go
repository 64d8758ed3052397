package propagation_test

import (
	"encoding/base64"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/buildconfig"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

var _ = Describe("Build configuration placed once per org", func() {
	var org string

	BeforeEach(func(ctx SpecContext) {
		org = createOrg(ctx)
	})

	It("reaches spaces created before and after, and the build ServiceAccount lists the credentials and mounts no API token", func(ctx SpecContext) {
		before := createSpace(ctx, org)
		placeRegistry(ctx, org, "registry", "registry.local", "registry.local/"+org)
		placeServiceAccount(ctx, org, "build")
		after := createSpace(ctx, org)

		for _, space := range []string{before, after} {
			Eventually(buildConfig(ctx, org, space)).Should(And(
				HaveField("DropletRepositoryPrefix", "registry.local/"+org+"/"+space),
				HaveField("RegistryCredentials", ConsistOf(cfv1alpha1.RegistryCredential{
					Registry: "registry.local", Secret: cfv1alpha1.PlacedObject{Name: "registry", From: org}})),
				HaveField("ServiceAccount", Equal(&cfv1alpha1.PlacedObject{Name: "build", From: org})),
			), space)
			sa := &corev1.ServiceAccount{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "build"}, sa)).To(Succeed())
			Expect(sa.Secrets).To(ConsistOf(corev1.ObjectReference{Name: "registry"}))
			Expect(sa.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: "registry"}))
			Expect(sa.AutomountServiceAccountToken).To(HaveValue(BeFalse()), "kpack's build pods run as it and never call the apiserver")
		}
		// Without kpack, no Builder is placed: that is the one thing the spaces miss.
		Expect(buildReady(ctx, org, after)()).To(HaveField("Reason", cfv1alpha1.BuilderMissingReason))
	})

	It("propagates nothing an operator did not label, and leaves every space's own default ServiceAccount alone", func(ctx SpecContext) {
		space := createSpace(ctx, org)
		unlabelled := registrySecret(org, "private", "registry.local", "")
		delete(unlabelled.Labels, cfv1alpha1.BuildConfigLabel)
		Expect(k8s.Create(ctx, unlabelled)).To(Succeed())
		orgDefault := &corev1.ServiceAccount{}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: "default"}, orgDefault) }).Should(Succeed())
		placeRegistry(ctx, org, "registry", "registry.local", "registry.local/"+org)
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "registry"}, &corev1.Secret{})
		}).Should(Succeed())

		Consistently(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "private"}, &corev1.Secret{})
		}, "2s").ShouldNot(Succeed())
		spaceDefault := &corev1.ServiceAccount{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "default"}, spaceDefault)).To(Succeed())
		Expect(spaceDefault.UID).NotTo(Equal(orgDefault.UID))
		Expect(spaceDefault.Labels).NotTo(HaveKey("hnc.x-k8s.io/inherited-from"))
	})

	It("lets a space override the org for that space alone", func(ctx SpecContext) {
		overridden, other := createSpace(ctx, org), createSpace(ctx, org)
		placeRegistry(ctx, org, "registry", "registry.local", "registry.local/"+org)
		placeServiceAccount(ctx, org, "build")
		narrowed := "registry.local/" + org + "/" + overridden + "/own"
		placeRegistry(ctx, overridden, "space-registry", "registry.local", narrowed)

		Eventually(buildReady(ctx, org, overridden)).Should(HaveField("Reason", cfv1alpha1.CredentialsNotOnServiceAccountReason))
		placeServiceAccount(ctx, overridden, "space-build")
		Eventually(buildConfig(ctx, org, overridden)).Should(And(
			HaveField("DropletRepositoryPrefix", narrowed),
			HaveField("RegistryCredentials", ConsistOf(HaveField("Secret", cfv1alpha1.PlacedObject{Name: "space-registry", From: overridden}))),
			HaveField("ServiceAccount", Equal(&cfv1alpha1.PlacedObject{Name: "space-build", From: overridden})),
		))
		// The space's status and the ServiceAccount's list are two reconcilers' writes, in
		// either order.
		Eventually(func() []corev1.ObjectReference {
			sa := &corev1.ServiceAccount{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: overridden, Name: "space-build"}, sa)).To(Succeed())
			return sa.Secrets
		}).Should(ConsistOf(corev1.ObjectReference{Name: "space-registry"}))

		Expect(buildConfig(ctx, org, other)()).To(HaveField("DropletRepositoryPrefix", "registry.local/"+org+"/"+other))
		Expect(buildConfig(ctx, org, other)()).To(HaveField("ServiceAccount", Equal(&cfv1alpha1.PlacedObject{Name: "build", From: org})))
	})

	It("lists, for each registry, the Secret that wins there before any other that holds credentials for it, as kpack builds with the first", func(ctx SpecContext) {
		space := createSpace(ctx, org)
		both := registrySecret(org, "registry", "registry.local", "registry.local/"+org)
		both.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"builders.local":{"auth":"dXNlcjpzZWNyZXQ="},"registry.local":{"auth":"dXNlcjpzZWNyZXQ="}}}`)
		Expect(k8s.Create(ctx, both)).To(Succeed())
		placeRegistry(ctx, space, "space-registry", "registry.local", "")
		placeServiceAccount(ctx, space, "space-build")

		Eventually(func() []corev1.ObjectReference {
			sa := &corev1.ServiceAccount{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "space-build"}, sa)).To(Succeed())
			return sa.Secrets
		}).Should(Equal([]corev1.ObjectReference{{Name: "space-registry"}, {Name: "registry"}}),
			"the space's for the droplets' registry first; the org's after it, for the builder images' registry")
		Eventually(buildConfig(ctx, org, space)).Should(HaveField("RegistryCredentials", ConsistOf(
			cfv1alpha1.RegistryCredential{Registry: "builders.local", Secret: cfv1alpha1.PlacedObject{Name: "registry", From: org}},
			cfv1alpha1.RegistryCredential{Registry: "registry.local", Secret: cfv1alpha1.PlacedObject{Name: "space-registry", From: space}},
		)))
		Expect(buildReady(ctx, org, space)()).To(HaveField("Reason", cfv1alpha1.BuilderMissingReason), "nothing but the Builder is missing")
	})

	It("rotates credentials into every space, reports a broken rotation in each, and its fix", func(ctx SpecContext) {
		spaces := []string{createSpace(ctx, org), createSpace(ctx, org)}
		secret := placeRegistry(ctx, org, "registry", "registry.local", "registry.local/"+org)
		placeServiceAccount(ctx, org, "build")

		testenv.Update(ctx, k8s, secret, func() { secret.Data[corev1.DockerConfigJsonKey] = dockerConfig("registry.local", "rotated") })
		for _, space := range spaces {
			// HNC may not have made the first copy yet: wait for it too.
			Eventually(func(g Gomega) []byte {
				copied := &corev1.Secret{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "registry"}, copied)).To(Succeed())
				return copied.Data[corev1.DockerConfigJsonKey]
			}).Should(Equal(dockerConfig("registry.local", "rotated")))
		}

		buildServiceAccountSecrets := func() []corev1.ObjectReference {
			sa := &corev1.ServiceAccount{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: "build"}, sa)).To(Succeed())
			return sa.Secrets
		}
		Eventually(buildServiceAccountSecrets).Should(ContainElement(corev1.ObjectReference{Name: "registry"}))

		testenv.Update(ctx, k8s, secret, func() { secret.Data[corev1.DockerConfigJsonKey] = []byte(`{"auths":{"registry.local":{}}}`) })
		for _, space := range spaces {
			Eventually(buildReady(ctx, org, space)).Should(And(
				HaveField("Reason", cfv1alpha1.InvalidDockerConfigReason),
				HaveField("Message", ContainSubstring("Secret registry (from %s)", org))))
		}
		Consistently(buildServiceAccountSecrets, "2s").Should(ContainElement(corev1.ObjectReference{Name: "registry"}),
			"the ServiceAccount keeps a broken Secret, so that its fix reaches the spaces with the Secret's copies alone")

		testenv.Update(ctx, k8s, secret, func() { secret.Data[corev1.DockerConfigJsonKey] = dockerConfig("registry.local", "fixed") })
		for _, space := range spaces {
			Eventually(buildReady(ctx, org, space)).Should(HaveField("Reason", cfv1alpha1.BuilderMissingReason))
		}
	})

	It("turns BuildReady False when the org's credentials are removed, without writing the space namespace", func(ctx SpecContext) {
		space := createSpace(ctx, org)
		secret := placeRegistry(ctx, org, "registry", "registry.local", "registry.local/"+org)
		placeServiceAccount(ctx, org, "build")
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Reason", cfv1alpha1.BuilderMissingReason))
		ns := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: space}, ns)).To(Succeed())
		labelled := ns.ResourceVersion

		Expect(k8s.Delete(ctx, secret)).To(Succeed())
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Reason", cfv1alpha1.RegistryCredentialsMissingReason))
		Expect(k8s.Get(ctx, client.ObjectKey{Name: space}, ns)).To(Succeed())
		Expect(ns.ResourceVersion).To(Equal(labelled),
			"HNC reconciles every propagated object of the tree again on each change of a namespace")
	})

	It("reports a build ServiceAccount that names a Secret that does not exist, and keeps the operator's entry", func(ctx SpecContext) {
		space := createSpace(ctx, org)
		placeRegistry(ctx, org, "registry", "registry.local", "registry.local/"+org)
		Expect(k8s.Create(ctx, &corev1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "build", Labels: map[string]string{cfv1alpha1.BuildConfigLabel: "true"}},
			Secrets:    []corev1.ObjectReference{{Name: "deleted-long-ago"}},
		})).To(Succeed())

		Eventually(buildReady(ctx, org, space)).Should(And(
			HaveField("Reason", cfv1alpha1.ServiceAccountSecretMissingReason),
			HaveField("Message", ContainSubstring("ServiceAccount build (from %s) names Secrets that do not exist in %s: deleted-long-ago", org, space))))
		sa := &corev1.ServiceAccount{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: "build"}, sa)).To(Succeed())
		Expect(sa.Secrets).To(ConsistOf(corev1.ObjectReference{Name: "deleted-long-ago"}, corev1.ObjectReference{Name: "registry"}))
	})

	It("stops propagating an object whose label is removed", func(ctx SpecContext) {
		space := createSpace(ctx, org)
		secret := placeRegistry(ctx, org, "registry", "registry.local", "registry.local/"+org)
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "registry"}, &corev1.Secret{})
		}).Should(Succeed())

		testenv.Update(ctx, k8s, secret, func() { delete(secret.Labels, cfv1alpha1.BuildConfigLabel) })
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "registry"}, &corev1.Secret{})
		}).Should(WithTransform(client.IgnoreNotFound, BeNil()))
		Eventually(func() map[string]string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
			return secret.Annotations
		}).ShouldNot(HaveKey("propagate.hnc.x-k8s.io/all"))
	})

	It("does not copy a labelled Builder into spaces, but makes one ClusterBuilder of it for them, gone with the label", func(ctx SpecContext) {
		space := createSpace(ctx, org)
		placeRegistry(ctx, org, "registry", "registry.local", "registry.local/"+org)
		placeServiceAccount(ctx, org, "build")
		builder := &kpackv1alpha2.Builder{
			ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "org-builder", Labels: map[string]string{cfv1alpha1.BuildConfigLabel: "true"}},
			Spec: kpackv1alpha2.NamespacedBuilderSpec{
				BuilderSpec:        kpackv1alpha2.BuilderSpec{Tag: "registry.local/" + org + "/builders/org:v1"},
				ServiceAccountName: "build",
			},
		}
		Expect(k8s.Create(ctx, builder)).To(Succeed())

		clusterBuilder := &kpackv1alpha2.ClusterBuilder{ObjectMeta: metav1.ObjectMeta{Name: org + ".org-builder"}}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(clusterBuilder), clusterBuilder) }).Should(Succeed())
		Expect(clusterBuilder.Spec.ServiceAccountRef).To(Equal(corev1.ObjectReference{Namespace: org, Name: "build"}))
		Expect(clusterBuilder.Spec.Tag).To(Equal("registry.local/"+org+"/builders/org"), "kpack tags it clusterbuilder-<name>")
		// Without kpack nothing makes the ClusterBuilder Ready: the space says so.
		Eventually(buildReady(ctx, org, space)).Should(And(
			HaveField("Reason", cfv1alpha1.BuilderNotReadyReason),
			HaveField("Message", ContainSubstring("Builder org-builder (from %s) is not ready: ClusterBuilder %s.org-builder", org, org))))
		Expect(buildConfig(ctx, org, space)()).To(HaveField("Builder.ClusterBuilder", org+".org-builder"))
		Consistently(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: builder.Name}, &kpackv1alpha2.Builder{})
		}, "2s").Should(WithTransform(apierrors.IsNotFound, BeTrue()))

		testenv.Update(ctx, k8s, builder, func() { delete(builder.Labels, cfv1alpha1.BuildConfigLabel) })
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(clusterBuilder), clusterBuilder) }).
			Should(WithTransform(apierrors.IsNotFound, BeTrue()))
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Reason", cfv1alpha1.BuilderMissingReason))
	})

	It("makes the ClusterBuilder of an org's default Builder only once its ServiceAccount names credentials, which kpack pushes with", func(ctx SpecContext) {
		placeServiceAccount(ctx, org, "build")
		Expect(k8s.Create(ctx, &kpackv1alpha2.Builder{
			ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "org-builder", Labels: map[string]string{cfv1alpha1.BuildConfigLabel: "true"}},
			Spec: kpackv1alpha2.NamespacedBuilderSpec{
				BuilderSpec:        kpackv1alpha2.BuilderSpec{Tag: "registry.local/" + org + "/builders/org"},
				ServiceAccountName: "build",
			},
		})).To(Succeed())
		clusterBuilder := &kpackv1alpha2.ClusterBuilder{ObjectMeta: metav1.ObjectMeta{Name: org + ".org-builder"}}
		Consistently(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(clusterBuilder), clusterBuilder) }, "3s").
			Should(WithTransform(apierrors.IsNotFound, BeTrue()), "kpack would fail it, and back off for ever longer")

		placeRegistry(ctx, org, "registry", "registry.local", "registry.local/"+org)
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(clusterBuilder), clusterBuilder) }).Should(Succeed(),
			"made once cf-hnc has filled the ServiceAccount with the org's credentials")
	})

	It("marks what an operator placed in a namespace before HNC made it an org's, once HNC has", func(ctx SpecContext) {
		// HNC makes an org's namespace, then puts it in the tree and labels it: what an operator
		// places in between is seen before the namespace is an org's. A full namespace that gets
		// its parent and the org label later holds that moment open.
		late := "late-org-" + string(uuid.NewUUID())[:8]
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: late}}
		Expect(k8s.Create(ctx, ns)).To(Succeed())
		DeferCleanup(k8s.Delete, ns)
		secret := placeRegistry(ctx, late, "registry", "registry.local", "registry.local/"+late)
		placeServiceAccount(ctx, late, "build")
		Expect(k8s.Create(ctx, &kpackv1alpha2.Builder{
			ObjectMeta: metav1.ObjectMeta{Namespace: late, Name: "org-builder", Labels: map[string]string{cfv1alpha1.BuildConfigLabel: "true"}},
			Spec: kpackv1alpha2.NamespacedBuilderSpec{
				BuilderSpec:        kpackv1alpha2.BuilderSpec{Tag: "registry.local/" + late + "/builders/org"},
				ServiceAccountName: "build",
			},
		})).To(Succeed())
		propagateAnnotation := func() map[string]string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
			return secret.Annotations
		}
		Consistently(propagateAnnotation, "2s").ShouldNot(HaveKey("propagate.hnc.x-k8s.io/all"), "not an org's yet")

		Expect(k8s.Create(ctx, &hncv1alpha2.HierarchyConfiguration{
			ObjectMeta: metav1.ObjectMeta{Namespace: late, Name: hncv1alpha2.Singleton},
			Spec: hncv1alpha2.HierarchyConfigurationSpec{Parent: testenv.RootNamespace,
				Labels: []hncv1alpha2.MetaKVP{{Key: cfv1alpha1.OrgGUIDLabel, Value: late}}},
		})).To(Succeed())
		Eventually(propagateAnnotation).Should(HaveKeyWithValue("propagate.hnc.x-k8s.io/all", "true"))
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Name: late + ".org-builder"}, &kpackv1alpha2.ClusterBuilder{})
		}).Should(Succeed(), "the ClusterBuilder of the org's default Builder")
	})

	It("makes the root's default Builder push with its ServiceAccount in the builder namespace, never with one in the root", func(ctx SpecContext) {
		name := "root-builder-" + string(uuid.NewUUID())[:8]
		inRoot := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.RootNamespace, Name: name}}
		Expect(k8s.Create(ctx, inRoot)).To(Succeed())
		DeferCleanup(k8s.Delete, inRoot)
		builder := &kpackv1alpha2.Builder{
			ObjectMeta: metav1.ObjectMeta{Namespace: testenv.RootNamespace, Name: name, Labels: map[string]string{cfv1alpha1.BuildConfigLabel: "true"}},
			Spec: kpackv1alpha2.NamespacedBuilderSpec{
				BuilderSpec:        kpackv1alpha2.BuilderSpec{Tag: "registry.local/cnb/builders/" + name},
				ServiceAccountName: name,
			},
		}
		Expect(k8s.Create(ctx, builder)).To(Succeed())
		DeferCleanup(k8s.Delete, builder)

		clusterBuilder := &kpackv1alpha2.ClusterBuilder{ObjectMeta: metav1.ObjectMeta{Name: testenv.RootNamespace + "." + name}}
		Consistently(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(clusterBuilder), clusterBuilder) }, "3s").
			Should(WithTransform(apierrors.IsNotFound, BeTrue()), "the ServiceAccount in the root is not the one it pushes with")

		inBuilderNamespace := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.BuilderNamespace, Name: name},
			Secrets: []corev1.ObjectReference{{Name: name + "-push"}}}
		Expect(k8s.Create(ctx, inBuilderNamespace)).To(Succeed())
		DeferCleanup(k8s.Delete, inBuilderNamespace)
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(clusterBuilder), clusterBuilder) }).Should(Succeed())
		Expect(clusterBuilder.Spec.ServiceAccountRef).To(Equal(corev1.ObjectReference{Namespace: testenv.BuilderNamespace, Name: name}))
	})

	It("keeps the operator's own pull secrets on a build ServiceAccount beside the credentials it lists", func(ctx SpecContext) {
		placeRegistry(ctx, org, "registry", "registry.local", "registry.local/"+org)
		Expect(k8s.Create(ctx, &corev1.ServiceAccount{
			ObjectMeta:       metav1.ObjectMeta{Namespace: org, Name: "build", Labels: map[string]string{cfv1alpha1.BuildConfigLabel: "true"}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "operators-mirror"}},
		})).To(Succeed())
		sa := &corev1.ServiceAccount{}
		pullSecrets := func() []corev1.LocalObjectReference {
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: "build"}, sa)).To(Succeed())
			return sa.ImagePullSecrets
		}
		Eventually(pullSecrets).Should(Equal([]corev1.LocalObjectReference{{Name: "operators-mirror"}, {Name: "registry"}}))
		Expect(sa.AutomountServiceAccountToken).To(HaveValue(BeFalse()))

		By("a credential that stops winning goes; the operator's entry stays")
		placeRegistry(ctx, org, "another", "other.local", "")
		Eventually(pullSecrets).Should(Equal([]corev1.LocalObjectReference{{Name: "operators-mirror"}, {Name: "another"}, {Name: "registry"}}))
		Expect(k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "another"}})).To(Succeed())
		Eventually(pullSecrets).Should(Equal([]corev1.LocalObjectReference{{Name: "operators-mirror"}, {Name: "registry"}}))

		By("without the label, cf-hnc's entries go and the operator's stay; so does the token it kept out")
		testenv.Update(ctx, k8s, sa, func() { delete(sa.Labels, cfv1alpha1.BuildConfigLabel) })
		Eventually(pullSecrets).Should(Equal([]corev1.LocalObjectReference{{Name: "operators-mirror"}}))
		Expect(sa.AutomountServiceAccountToken).To(BeNil())
	})

	It("gives a ServiceAccount its API token back when it stops being a build ServiceAccount, also one that listed nothing", func(ctx SpecContext) {
		space := createSpace(ctx, org)
		placeServiceAccount(ctx, space, "build") // the space's own; no credentials to list anywhere
		sa := &corev1.ServiceAccount{}
		automount := func() *bool {
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "build"}, sa)).To(Succeed())
			return sa.AutomountServiceAccountToken
		}
		Eventually(automount).Should(HaveValue(BeFalse()))

		testenv.Update(ctx, k8s, sa, func() { delete(sa.Labels, cfv1alpha1.BuildConfigLabel) })
		Eventually(automount).Should(BeNil())
	})

	It("says which object of a space stops HNC propagating the org's, and does not retry it in a loop", func(ctx SpecContext) {
		squatted, other := createSpace(ctx, org), createSpace(ctx, org)
		Expect(k8s.Create(ctx, registrySecret(squatted, "cf-registry-org", "registry.local", ""))).To(Succeed())
		secret := placeRegistry(ctx, org, "cf-registry-org", "registry.local", "registry.local/"+org)

		Eventually(buildReady(ctx, org, squatted)).Should(And(
			HaveField("Reason", cfv1alpha1.BuildConfigNameConflictReason),
			HaveField("Message", ContainSubstring("Secret cf-registry-org in %s has the name of the Secret placed in %s", squatted, org))))
		Eventually(buildReady(ctx, org, other)).Should(And(
			HaveField("Reason", cfv1alpha1.PropagationBlockedReason),
			HaveField("Message", ContainSubstring("HNC refuses to propagate Secret cf-registry-org from %s", org)),
			HaveField("Message", ContainSubstring(squatted))))
		Eventually(func() map[string]string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
			return secret.Annotations
		}).Should(HaveKeyWithValue(buildconfig.PropagationBlockedAnnotation, HavePrefix("would overwrite objects in the following descendant namespace(s): "+squatted)))
		Consistently(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
			return secret.ResourceVersion
		}, "3s").Should(Equal(secret.ResourceVersion), "nothing is written again while HNC refuses")
	})

	It("reports an operator's conflicting HNC annotation instead of retrying it", func(ctx SpecContext) {
		space := createSpace(ctx, org)
		secret := registrySecret(org, "registry", "registry.local", "registry.local/"+org)
		secret.Annotations["propagate.hnc.x-k8s.io/none"] = "true"
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		Eventually(buildReady(ctx, org, space)).Should(And(
			HaveField("Reason", cfv1alpha1.PropagationBlockedReason),
			HaveField("Message", ContainSubstring("cannot have more than one selector"))))
	})

	It("refuses a space's droplet repository within the org's that is not within the space's own", func(ctx SpecContext) {
		space, sibling := createSpace(ctx, org), createSpace(ctx, org)
		placeRegistry(ctx, org, "registry", "registry.local", "registry.local/"+org)
		placeServiceAccount(ctx, org, "build")
		placeRegistry(ctx, space, "space-registry", "registry.local", "registry.local/"+org+"/"+sibling)
		placeServiceAccount(ctx, space, "space-build")
		Eventually(buildReady(ctx, org, space)).Should(And(
			HaveField("Reason", cfv1alpha1.InvalidDropletRepositoryReason),
			HaveField("Message", ContainSubstring(`droplet repository "registry.local/%s/%s" lies within "registry.local/%s"`, org, sibling, org))))
		Expect(buildConfig(ctx, org, space)()).To(HaveField("DropletRepositoryPrefix", BeEmpty()))
	})

	It("gives a space the registry and repository an operator placed for it alone, with nothing placed at the org", func(ctx SpecContext) {
		space, other := createSpace(ctx, org), createSpace(ctx, org)
		placeRegistry(ctx, space, "space-registry", "own.registry", "own.registry/teams/"+space)
		placeServiceAccount(ctx, space, "space-build")

		Eventually(buildConfig(ctx, org, space)).Should(And(
			HaveField("DropletRepositoryPrefix", "own.registry/teams/"+space),
			HaveField("RegistryCredentials", ConsistOf(cfv1alpha1.RegistryCredential{
				Registry: "own.registry", Secret: cfv1alpha1.PlacedObject{Name: "space-registry", From: space}})),
			HaveField("ServiceAccount", Equal(&cfv1alpha1.PlacedObject{Name: "space-build", From: space})),
		))
		Eventually(func() []corev1.ObjectReference {
			sa := &corev1.ServiceAccount{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "space-build"}, sa)).To(Succeed())
			return sa.Secrets
		}).Should(ConsistOf(corev1.ObjectReference{Name: "space-registry"}))
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Reason", cfv1alpha1.BuilderMissingReason),
			"only the Builder is missing: no kpack here")
		Eventually(buildReady(ctx, org, other)).Should(HaveField("Reason", cfv1alpha1.RegistryCredentialsMissingReason),
			"the other space of the org has nothing")
	})

	It("never lets one org's credentials reach another org", func(ctx SpecContext) {
		otherOrg := createOrg(ctx)
		mine, theirs := createSpace(ctx, org), createSpace(ctx, otherOrg)
		placeRegistry(ctx, org, "org-a-registry", "registry.local", "registry.local/"+org)
		placeRegistry(ctx, otherOrg, "org-b-registry", "registry.local", "registry.local/"+otherOrg)
		Eventually(buildConfig(ctx, org, mine)).Should(HaveField("DropletRepositoryPrefix", "registry.local/"+org+"/"+mine))
		Eventually(buildConfig(ctx, otherOrg, theirs)).Should(HaveField("DropletRepositoryPrefix", "registry.local/"+otherOrg+"/"+theirs))

		secrets := &corev1.SecretList{}
		Expect(k8s.List(ctx, secrets, client.InNamespace(theirs))).To(Succeed())
		Expect(secrets.Items).NotTo(ContainElement(HaveField("ObjectMeta.Name", "org-a-registry")))
		Expect(k8s.List(ctx, secrets, client.InNamespace(otherOrg))).To(Succeed())
		Expect(secrets.Items).NotTo(ContainElement(HaveField("ObjectMeta.Name", "org-a-registry")))
	})
})

func dockerConfig(registry, password string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte("user:" + password))
	return []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, registry, auth))
}

func registrySecret(namespace, name, registry, prefix string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{cfv1alpha1.BuildConfigLabel: "true"}},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: dockerConfig(registry, "secret")},
	}
	if prefix != "" {
		s.Annotations = map[string]string{cfv1alpha1.DropletRepositoryPrefixAnnotation: prefix}
	}
	return s
}

// placeRegistry is the operator's step: a labelled credential Secret with the droplet repository.
func placeRegistry(ctx SpecContext, namespace, name, registry, prefix string) *corev1.Secret {
	s := registrySecret(namespace, name, registry, prefix)
	Expect(k8s.Create(ctx, s)).To(Succeed())
	return s
}

// placeServiceAccount is the operator's step: a labelled build ServiceAccount, left to cf-hnc to fill.
func placeServiceAccount(ctx SpecContext, namespace, name string) {
	Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name, Labels: map[string]string{cfv1alpha1.BuildConfigLabel: "true"}}})).To(Succeed())
}

func createOrg(ctx SpecContext) string {
	return testenv.CreateOrg(ctx, k8s, "org "+string(uuid.NewUUID()))
}

func createSpace(ctx SpecContext, org string) string {
	return testenv.CreateSpace(ctx, k8s, org, "space "+string(uuid.NewUUID()))
}

func getSpace(ctx SpecContext, org, space string) *cfv1alpha1.CFSpace {
	s := &cfv1alpha1.CFSpace{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, s)).To(Succeed())
	return s
}

func buildConfig(ctx SpecContext, org, space string) func() *cfv1alpha1.SpaceBuildConfig {
	return func() *cfv1alpha1.SpaceBuildConfig { return getSpace(ctx, org, space).Status.Build }
}

func buildReady(ctx SpecContext, org, space string) func() *metav1.Condition {
	return func() *metav1.Condition {
		return meta.FindStatusCondition(getSpace(ctx, org, space).Status.Conditions, cfv1alpha1.BuildReadyCondition)
	}
}
