package propagation_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

var _ = Describe("A Secret that a build ServiceAccount names, but that is no build configuration", func() {
	// The space reconciler looks at a missing one again once a minute; the margin covers the
	// reconcile that notices it.
	const recheck = time.Minute + 30*time.Second

	It("is looked at again until it exists, and the space recovers without any other event", func(ctx SpecContext) {
		org := createOrg(ctx)
		space := createSpace(ctx, org)
		placeRegistry(ctx, org, "registry", "registry.local", "registry.local/"+org)
		// The operator's own pull Secret, placed in each space by hand: not labelled, so neither
		// cached nor watched by cf-hnc.
		Expect(k8s.Create(ctx, &corev1.ServiceAccount{
			ObjectMeta:       metav1.ObjectMeta{Namespace: org, Name: "build", Labels: map[string]string{cfv1alpha1.BuildConfigLabel: "true"}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "operator-pull"}},
		})).To(Succeed())
		Eventually(func() []corev1.ObjectReference {
			sa := &corev1.ServiceAccount{}
			Expect(client.IgnoreNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: "build"}, sa))).To(Succeed())
			return sa.Secrets
		}).Should(ConsistOf(corev1.ObjectReference{Name: "registry"}), "cf-hnc's list has reached the space's copy")
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Message", ContainSubstring("names Secrets that do not exist in %s: operator-pull", space)))
		// The events of the placement are over: what follows is the recheck's alone.
		Consistently(buildReady(ctx, org, space), "3s").Should(HaveField("Reason", cfv1alpha1.ServiceAccountSecretMissingReason))

		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "operator-pull"},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: dockerConfig("builders.local", "pull")},
		})).To(Succeed())
		Eventually(buildReady(ctx, org, space)).WithTimeout(recheck).Should(HaveField("Reason", cfv1alpha1.BuilderMissingReason),
			"nothing but the Builder is missing")
	}, SpecTimeout(3*time.Minute))
})
