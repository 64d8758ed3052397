package rollout

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/staging"
)

// The rollout reconciler runs in a manager against a real apiserver, with no kpack controller
// and no node: the specs make rebuild pods as kpack does, and finish them as the kubelet does.
var _ = Describe("the rollout, against the apiserver", Ordered, func() {
	const (
		root    = "cf"
		rollout = "rollout"
	)
	var k8s client.Client

	BeforeAll(func(ctx SpecContext) {
		SetDefaultEventuallyTimeout(20 * time.Second)
		SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
		ctrl.SetLogger(GinkgoLogr)
		cp, err := controlplane.Start(ctx, controlplane.Options{WorkDir: ".local/rollout"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cp.Stop)
		k8s = cp.Client
		cftest.StartManager(cp.Config, root, staging.BuildPodSelector, func(mgr ctrl.Manager) error {
			return NewRolloutReconciler(mgr.GetClient(), 1).SetupWithManager(mgr)
		})
		// In CF's tree: the rollout paces only the pods there.
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rollout, Labels: cftest.TreeLabels(root, "1")}})).To(Succeed())
	}, NodeTimeout(2*time.Minute))

	It("lets one paced rebuild pod run at a time, stack fixes first, the next when one finishes", func(ctx SpecContext) {
		pod := func(name, reason string) *corev1.Pod {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: rollout, Name: name,
					Labels:      map[string]string{kpackv1alpha2.BuildLabel: name},
					Annotations: map[string]string{kpackv1alpha2.BuildReasonAnnotation: reason},
					// As kpack makes it: its Build controls it.
					OwnerReferences: []metav1.OwnerReference{{APIVersion: kpackv1alpha2.SchemeGroupVersion.String(), Kind: kpackv1alpha2.BuildKind,
						Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "completion", Image: "kpack/completion"}}},
			}
			Expect(gate(p)).To(BeTrue())
			Expect(k8s.Create(ctx, p)).To(Succeed())
			return p
		}
		ungated := func() []string {
			list := &corev1.PodList{}
			Expect(k8s.List(ctx, list, client.InNamespace(rollout))).To(Succeed())
			var names []string
			for _, p := range list.Items {
				if !gated(&p) && !podDone(&p) {
					names = append(names, p.Name)
				}
			}
			return names
		}
		finish := func(p *corev1.Pod) {
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
				p.Status.Phase = corev1.PodSucceeded
				return k8s.Status().Update(ctx, p)
			})).To(Succeed())
		}

		first := pod("upgrade-1", "BUILDPACK")
		Eventually(ungated).Should(Equal([]string{"upgrade-1"}))
		later := pod("upgrade-2", "LIFECYCLE,BUILDPACK")
		fix := pod("fix", "STACK")
		Consistently(ungated, "1s").Should(Equal([]string{"upgrade-1"}), "one at a time")
		Eventually(func() map[string]float64 { return cftest.Gauge("cf_hnc_rebuild_pods", "state") }).Should(Equal(map[string]float64{"waiting": 2, "running": 1}))

		finish(first)
		Eventually(ungated).Should(Equal([]string{"fix"}), "the stack fix first, though it came last")
		finish(fix)
		Eventually(ungated).Should(Equal([]string{"upgrade-2"}))
		finish(later)
		Eventually(func() map[string]float64 { return cftest.Gauge("cf_hnc_rebuild_pods", "state") }).Should(Equal(map[string]float64{"waiting": 0, "running": 0}))
	})

})
