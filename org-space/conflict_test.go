package orgspace_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

var _ = Describe("An org whose namespace name is taken", func() {
	It("reports the conflict, and deleting the org touches neither the namespace nor its hierarchy", func(ctx SpecContext) {
		org := newOrg("Org " + string(uuid.NewUUID()))
		foreign := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: org.Name}}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		child := &hncv1alpha2.SubnamespaceAnchor{ObjectMeta: metav1.ObjectMeta{Namespace: foreign.Name, Name: foreign.Name + "-team"}}
		Expect(k8s.Create(ctx, child)).To(Succeed())
		Expect(k8s.Create(ctx, org)).To(Succeed())
		Eventually(readiness(ctx, org)).Should(HaveReason(cfv1alpha1.AnchorConflictReason))

		Expect(k8s.Delete(ctx, org)).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(org), org) }).Should(BeNotFound())
		hierarchy := &hncv1alpha2.HierarchyConfiguration{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: foreign.Name, Name: hncv1alpha2.Singleton}, hierarchy)).To(Succeed())
		Expect(hierarchy.Spec.AllowCascadingDeletion).To(BeFalse(), "cascading deletion stays the namespace owner's choice")
		Consistently(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(foreign), foreign) }, "2s").Should(Succeed())
		Expect(foreign.DeletionTimestamp).To(BeNil())
	})
})
