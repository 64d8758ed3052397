package e2e_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"code.cloudfoundry.org/cf-hnc/internal/metrics"
)

// A foundation's spaces sit idle most of the time: a controller that rewrites what did not
// change (a status with a new timestamp, an apply that differs in a default) costs the
// apiserver and etcd in proportion to the number of spaces, for nothing. Serial: any other
// spec's work would be counted too.
var _ = Describe("A quiet foundation", Serial, func() {
	It("gets no write from cf-hnc in a minute once its spaces are settled", func(ctx SpecContext) {
		org := createOrg(ctx, "quiet-"+string(uuid.NewUUID())[:8])
		placeOrgRegistry(ctx, org)
		var spaces []string
		for i := range 5 {
			spaces = append(spaces, createSpace(ctx, org, fmt.Sprintf("space-%d", i)))
		}
		for _, space := range spaces {
			Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
		}

		token := metricsToken(ctx)
		writes := func() (map[string]float64, error) {
			address, err := cp.ManagerMetrics(ctx)
			if err != nil {
				return nil, err
			}
			families, err := metrics.Scrape(ctx, address, token)
			if err != nil {
				return nil, err
			}
			_, byVerbKind := metrics.Writes(families)
			return byVerbKind, nil
		}
		By("waiting until the writes that made the spaces are done: 10 s without one")
		var settled map[string]float64
		Eventually(func(g Gomega) {
			before, err := writes()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(before).NotTo(BeEmpty(), "the spaces were made with writes that the counter saw")
			time.Sleep(10 * time.Second)
			settled, err = writes()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(settled).To(Equal(before))
		}, 2*time.Minute, time.Second).Should(Succeed())

		By("counting cf-hnc's writes, by verb and kind, for a minute")
		Consistently(writes, time.Minute, 5*time.Second).Should(Equal(settled))
	}, SpecTimeout(5*time.Minute))
})

// metricsToken returns the token of a ServiceAccount allowed to read the manager's metrics, as
// a Prometheus in the cluster would have.
func metricsToken(ctx SpecContext) string {
	GinkgoHelper()
	ns := createNamespace(ctx)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}}
	Expect(k8s.Create(ctx, sa)).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cf-hnc-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	})).To(Succeed())
	request := &authenticationv1.TokenRequest{}
	Expect(k8s.SubResource("token").Create(ctx, sa, request)).To(Succeed())
	return request.Status.Token
}
