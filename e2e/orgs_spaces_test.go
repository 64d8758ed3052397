package e2e_test

import (
	"time"

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
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

var _ = Describe("Orgs and spaces that build", func() {
	It("makes a space BuildReady once the org has its registry, with the root's default Builder", func(ctx SpecContext) {
		org := createOrg(ctx, "acme-"+string(uuid.NewUUID())[:8])
		space := createSpace(ctx, org, "dev")
		placeOrgRegistry(ctx, org)

		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
		s := &cfv1alpha1.CFSpace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, s)).To(Succeed())
		Expect(s.Status.Build.Builder.Name).To(Equal(controlplane.DefaultBuilder))
		Expect(s.Status.Build.Builder.From).To(Equal(root))
		Expect(s.Status.Build.Builder.ClusterBuilder).To(Equal(root + "." + controlplane.DefaultBuilder))
		Expect(s.Status.Build.DropletRepositoryPrefix).To(Equal(cp.Kpack().Registry.Host() + "/" + org + "/" + space))
		Expect(s.Status.Build.ServiceAccount).To(Equal(&cfv1alpha1.PlacedObject{Name: "cf-build-org", From: org}))

		By("BuildReady turning False and True again without a write to the space namespace")
		ns := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: space}, ns)).To(Succeed())
		labelled := ns.ResourceVersion
		Expect(k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "cf-registry-org"}})).To(Succeed())
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionFalse))
		placeOrgCredentials(ctx, org)
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
		Expect(k8s.Get(ctx, client.ObjectKey{Name: space}, ns)).To(Succeed())
		Expect(ns.ResourceVersion).To(Equal(labelled),
			"HNC reconciles every propagated object of the tree again on each change of a namespace")
	})

	It("pushes the root's default Builder with credentials outside HNC's tree, which HNC never sends to a space", Label(localLabel), func(ctx SpecContext) {
		clusterBuilder := &kpackv1alpha2.ClusterBuilder{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: root + "." + controlplane.DefaultBuilder}, clusterBuilder)).To(Succeed())
		pushedWith := clusterBuilder.Spec.ServiceAccountRef
		Expect(pushedWith.Namespace).To(Equal(controlplane.BuilderNamespace))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: root, Name: pushedWith.Name}, &corev1.ServiceAccount{})).
			To(WithTransform(apierrors.IsNotFound, BeTrue()), "an unpropagated ServiceAccount in the root costs every space a DELETE from HNC on each namespace change")
		builderNamespace := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: pushedWith.Namespace}, builderNamespace)).To(Succeed())
		Expect(builderNamespace.Labels).NotTo(HaveKey(root+hncv1alpha2.LabelTreeDepthSuffix), "the builder namespace is not in the CF tree")
	})
})

func createOrg(ctx SpecContext, name string) string { return testenv.CreateOrg(ctx, k8s, name) }

func createSpace(ctx SpecContext, org, name string) string {
	return testenv.CreateSpace(ctx, k8s, org, name)
}

var buildConfig = map[string]string{cfv1alpha1.BuildConfigLabel: "true"}

// placeOrgRegistry is the operator's once-per-org step: a registry user for the org, its
// credentials with the droplet repository, and a build ServiceAccount.
func placeOrgRegistry(ctx SpecContext, org string) {
	placeOrgCredentials(ctx, org)
	placeOrgServiceAccount(ctx, org)
}

func placeOrgCredentials(ctx SpecContext, org string) {
	Expect(k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "cf-registry-org", Labels: buildConfig,
			Annotations: map[string]string{cfv1alpha1.DropletRepositoryPrefixAnnotation: cp.Kpack().Registry.Host() + "/" + org}},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: registryUser(org)},
	})).To(Succeed())
}

func placeOrgServiceAccount(ctx SpecContext, org string) {
	Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "cf-build-org", Labels: buildConfig}})).To(Succeed())
}

func buildReady(ctx SpecContext, org, space string) func() *metav1.Condition {
	return func() *metav1.Condition {
		s := &cfv1alpha1.CFSpace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, s)).To(Succeed())
		return meta.FindStatusCondition(s.Status.Conditions, cfv1alpha1.BuildReadyCondition)
	}
}

var _ = Describe("A default Builder placed in an org before its ServiceAccount", func() {
	It("gets its ClusterBuilder, and the org's spaces can build, as soon as the ServiceAccount arrives", func(ctx SpecContext) {
		org := createOrg(ctx, "late-"+string(uuid.NewUUID())[:8])
		placeOrgCredentials(ctx, org)
		builder := cp.Kpack().Builder(org, "org-builder", "cf-build-org", cp.Kpack().Registry.Host()+"/"+org+"/builders/org")
		builder.Labels = buildConfig
		Expect(k8s.Create(ctx, builder)).To(Succeed())
		space := createSpace(ctx, org, "dev")
		Eventually(buildReady(ctx, org, space)).Should(And(
			HaveField("Reason", cfv1alpha1.ServiceAccountMissingReason),
			HaveField("Message", ContainSubstring("cf-hnc has not made ClusterBuilder %s.org-builder from it yet", org))))

		placeOrgServiceAccount(ctx, org)
		clusterBuilder := &kpackv1alpha2.ClusterBuilder{}
		Eventually(func() string {
			if err := k8s.Get(ctx, client.ObjectKey{Name: org + ".org-builder"}, clusterBuilder); err != nil {
				return ""
			}
			return clusterBuilder.Status.LatestImage
		}, 30*time.Second).Should(HavePrefix(cp.Kpack().Registry.Host() + "/" + org + "/builders/org:clusterbuilder-" + org + ".org-builder@sha256:"))
		Eventually(buildReady(ctx, org, space), 10*time.Second).Should(HaveField("Status", metav1.ConditionTrue))
		s := &cfv1alpha1.CFSpace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, s)).To(Succeed())
		Expect(s.Status.Build.Builder).To(HaveField("PlacedObject", cfv1alpha1.PlacedObject{Name: "org-builder", From: org}),
			"the org's Builder wins over the root's")
	})
})
