package e2e_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/testenv"
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
		Expect(s.Status.Build.ServiceAccount).To(Equal(&cfv1alpha1.PlacedObject{Name: "cf-build-org", From: org}))
		ns := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: space}, ns)).To(Succeed())
		Expect(ns.Labels).To(HaveKeyWithValue(cfv1alpha1.BuildReadyLabel, "true"))
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

var _ = Describe("A Builder copy that reaches a space before its ServiceAccount", func() {
	It("builds as soon as the ServiceAccount arrives, however long kpack has been backing off", func(ctx SpecContext) {
		org := createOrg(ctx, "late-"+string(uuid.NewUUID())[:8])
		placeOrgCredentials(ctx, org)
		builder := cp.Kpack().Builder(org, "org-builder", "cf-build-org", cp.Kpack().Registry.Host()+"/"+org+"/builders/org")
		builder.Labels = buildConfig
		Expect(k8s.Create(ctx, builder)).To(Succeed())
		space := createSpace(ctx, org, "dev")
		copied := &kpackv1alpha2.Builder{}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: builder.Name}, copied) }).Should(Succeed())

		By("letting kpack fail and back off while the ServiceAccount is missing")
		time.Sleep(30 * time.Second)
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(copied), copied)).To(Succeed())
		Expect(copied.Status.LatestImage).To(BeEmpty())

		placeOrgServiceAccount(ctx, org)
		Eventually(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(copied), copied)).To(Succeed())
			return copied.Status.LatestImage
		}, 10*time.Second).ShouldNot(BeEmpty())
		Eventually(buildReady(ctx, org, space), 10*time.Second).Should(HaveField("Status", metav1.ConditionTrue))
	})
})
