package manager_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
	"code.cloudfoundry.org/cf-hnc/manager"
	"code.cloudfoundry.org/cf-hnc/rollout"
)

func TestManager(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "manager (unit; apiserver)")
}

var (
	k8s    client.Client
	cached client.Client
	// apiserver is an administrator's connection to the suite's apiserver.
	apiserver *rest.Config
)

var _ = BeforeSuite(func(ctx SpecContext) {
	cp, err := controlplane.Start(ctx, controlplane.Options{WorkDir: filepath.Join(".local", "manager")})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Stop)
	k8s, apiserver = cp.Client, cp.Config

	opts, err := manager.Options(controlplane.RootNamespace)
	Expect(err).NotTo(HaveOccurred())
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	mgr, err := ctrl.NewManager(cp.Config, opts)
	Expect(err).NotTo(HaveOccurred())
	testenv.RunManager(mgr)
	Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
	cached = mgr.GetClient()
}, NodeTimeout(2*time.Minute))

var _ = Describe("The manager's cache", func() {
	const namespace = "cache"
	labelled := map[string]string{cfv1alpha1.BuildConfigLabel: "true"}

	BeforeEach(func(ctx SpecContext) {
		// No HNC runs in this suite: the tests put on the tree labels that HNC would.
		err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: cftest.TreeLabels(controlplane.RootNamespace, "2")}})
		Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	})

	// cachedAs waits until the cache holds obj's name and returns what it holds.
	cachedAs := func(ctx context.Context, obj client.Object) client.Object {
		held := obj.DeepCopyObject().(client.Object)
		Eventually(func() error { return cached.Get(ctx, client.ObjectKeyFromObject(obj), held) }).Should(Succeed())
		return held
	}

	It("keeps the managed fields of the build configuration an operator placed, not of HNC's copies, and no other Secret", func(ctx SpecContext) {
		// kubectl apply leaves the whole object in an annotation, and HNC copies it along.
		applied := map[string]string{corev1.LastAppliedConfigAnnotation: `{"kind":"Secret"}`, "kept": "true"}
		placed := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "placed", Labels: labelled, Annotations: applied},
			StringData: map[string]string{"key": "placed"}}
		copied := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "copied", Annotations: applied,
			Labels: map[string]string{cfv1alpha1.BuildConfigLabel: "true", hncv1alpha2.LabelInheritedFrom: "org"}},
			StringData: map[string]string{"key": "copied"}}
		other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "other"}}
		// The unlabelled one first: once a later one is cached, the cache has seen it too.
		for _, obj := range []client.Object{other, placed, copied} {
			Expect(k8s.Create(ctx, obj)).To(Succeed())
		}

		placedHeld := cachedAs(ctx, placed)
		Expect(placedHeld.GetManagedFields()).NotTo(BeEmpty())
		Expect(placedHeld.GetAnnotations()).To(Equal(map[string]string{"kept": "true"}))
		copiedHeld := cachedAs(ctx, copied).(*corev1.Secret)
		Expect(copiedHeld.ManagedFields).To(BeEmpty())
		Expect(copiedHeld.Annotations).To(Equal(map[string]string{"kept": "true"}))
		Expect(copiedHeld.Data).To(HaveKeyWithValue("key", []byte("copied")))
		Expect(apierrors.IsNotFound(cached.Get(ctx, client.ObjectKeyFromObject(other), &corev1.Secret{}))).To(BeTrue(), "an unlabelled Secret is not cached")
	})

	It("holds the namespaces of CF's tree and the anchors cf-hnc made, none of another tenant's", func(ctx SpecContext) {
		// No HNC runs in this suite: the tests put on the tree labels that HNC would.
		tenants := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant",
			Labels: map[string]string{"tenant" + hncv1alpha2.LabelTreeDepthSuffix: "0"}}}
		org := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "org",
			Labels: map[string]string{controlplane.RootNamespace + hncv1alpha2.LabelTreeDepthSuffix: "1", "org" + hncv1alpha2.LabelTreeDepthSuffix: "0"}}}
		tenantsAnchor := &hncv1alpha2.SubnamespaceAnchor{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "tenants"}}
		spaceAnchor := &hncv1alpha2.SubnamespaceAnchor{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "space",
			Labels: map[string]string{"app.kubernetes.io/managed-by": "cf-hnc"}}}
		// Those not to be cached first: once a later one is cached, the cache has seen them too.
		for _, obj := range []client.Object{tenants, tenantsAnchor, org, spaceAnchor} {
			Expect(k8s.Create(ctx, obj)).To(Succeed())
		}

		cachedAs(ctx, org)
		cachedAs(ctx, spaceAnchor)
		Expect(apierrors.IsNotFound(cached.Get(ctx, client.ObjectKeyFromObject(tenants), &corev1.Namespace{}))).To(BeTrue(), "a namespace outside CF's tree is not cached")
		Expect(apierrors.IsNotFound(cached.Get(ctx, client.ObjectKeyFromObject(tenantsAnchor), &hncv1alpha2.SubnamespaceAnchor{}))).To(BeTrue(), "an anchor cf-hnc did not make is not cached")
	})

	It("keeps of an app's build and instance pods what is read of them, and no other pod", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "default"}}))).To(Succeed())
		pod := func(name string, podLabels map[string]string) *corev1.Pod {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: podLabels,
					Annotations: map[string]string{rollout.PacedAnnotation: "true", kpackv1alpha2.BuildReasonAnnotation: "STACK"}},
				Spec: corev1.PodSpec{
					SchedulingGates: []corev1.PodSchedulingGate{{Name: rollout.Gate}},
					Containers: []corev1.Container{{Name: "app", Image: "droplet",
						Env: []corev1.EnvVar{{Name: "CNB_PLATFORM_API", Value: "0.13"}}}},
				},
			}
		}
		// kpack copies the Image's labels, the app's among them, onto its build pods.
		build := pod("build", map[string]string{kpackv1alpha2.BuildLabel: "build", cfv1alpha1.AppLabel: "app"})
		instance := pod("app-web-0", map[string]string{cfv1alpha1.AppLabel: "app", cfv1alpha1.ProcessLabel: "app-web"})
		instance.Spec.SchedulingGates = nil
		otherTenantsBuild := pod("other-build", map[string]string{kpackv1alpha2.BuildLabel: "other"})
		other := pod("other", nil)
		for _, obj := range []client.Object{other, otherTenantsBuild, build, instance} {
			Expect(k8s.Create(ctx, obj)).To(Succeed())
		}

		held := cachedAs(ctx, build).(*corev1.Pod)
		Expect(held.Spec.Containers).To(BeEmpty())
		Expect(held.ManagedFields).To(BeEmpty())
		Expect(held.Spec.SchedulingGates).To(ConsistOf(corev1.PodSchedulingGate{Name: rollout.Gate}))
		Expect(held.Annotations).To(HaveKeyWithValue(kpackv1alpha2.BuildReasonAnnotation, "STACK"))
		Expect(held.Status.Phase).To(Equal(corev1.PodPending))

		heldInstance := cachedAs(ctx, instance).(*corev1.Pod)
		Expect(heldInstance.Spec.Containers).To(ConsistOf(corev1.Container{Name: "app", Image: "droplet"}), "the image it runs, not its environment")
		Expect(heldInstance.ManagedFields).To(BeEmpty())

		for _, obj := range []client.Object{otherTenantsBuild, other} {
			Expect(apierrors.IsNotFound(cached.Get(ctx, client.ObjectKeyFromObject(obj), &corev1.Pod{}))).To(BeTrue(), "a pod of no app is not cached: %s", obj.GetName())
		}
	})
})
