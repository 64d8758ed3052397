package orgspace_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

var _ = Describe("Orgs and spaces", func() {
	It("makes an org namespace under the root and a space namespace under the org", func(ctx SpecContext) {
		org := createOrg(ctx, "Org "+string(uuid.NewUUID()))
		space := createSpace(ctx, org.Name, "dev")
		Eventually(ready(ctx, space)).Should(Equal(metav1.ConditionTrue))

		ns := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: space.Name}, ns)).To(Succeed())
		Expect(ns.Labels).To(HaveKeyWithValue(cfv1alpha1.SpaceGUIDLabel, space.Name))
		Expect(ns.Labels).To(HaveKeyWithValue(cfv1alpha1.OrgGUIDLabel, org.Name))
		Expect(ns.Labels).To(HaveKeyWithValue(root+".tree.hnc.x-k8s.io/depth", "2"))
		Expect(ns.Annotations).To(HaveKeyWithValue(cfv1alpha1.SpaceNameAnnotation, "dev"))
	}, SpecTimeout(time.Minute))
})

func createOrg(ctx SpecContext, name string) *cfv1alpha1.CFOrg {
	org := &cfv1alpha1.CFOrg{
		ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: string(uuid.NewUUID())},
		Spec:       cfv1alpha1.CFOrgSpec{DisplayName: name},
	}
	Expect(k8s.Create(ctx, org)).To(Succeed())
	Eventually(ready(ctx, org)).Should(Equal(metav1.ConditionTrue))
	return org
}

func createSpace(ctx SpecContext, orgGUID, name string) *cfv1alpha1.CFSpace {
	space := &cfv1alpha1.CFSpace{
		ObjectMeta: metav1.ObjectMeta{Namespace: orgGUID, Name: string(uuid.NewUUID())},
		Spec:       cfv1alpha1.CFSpaceSpec{DisplayName: name},
	}
	Expect(k8s.Create(ctx, space)).To(Succeed())
	return space
}

func ready(ctx SpecContext, obj client.Object) func() metav1.ConditionStatus {
	return func() metav1.ConditionStatus {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return ""
		}
		var conditions []metav1.Condition
		switch o := obj.(type) {
		case *cfv1alpha1.CFOrg:
			conditions = o.Status.Conditions
		case *cfv1alpha1.CFSpace:
			conditions = o.Status.Conditions
		}
		if c := meta.FindStatusCondition(conditions, cfv1alpha1.ReadyCondition); c != nil {
			return c.Status
		}
		return ""
	}
}
