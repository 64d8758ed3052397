package builders

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
)

var _ = Describe("the rebuild reconciler, against the apiserver", Ordered, func() {
	var (
		k8s client.Client
		r   *RebuildReconciler
	)

	BeforeAll(func(ctx SpecContext) {
		cp, err := controlplane.Start(ctx, controlplane.Options{WorkDir: ".local/builders"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cp.Stop)
		k8s = cp.Client
		r = NewRebuildReconciler(k8s, events.NewFakeRecorder(10))
	}, NodeTimeout(2*time.Minute))

	kpackBuild := func(ctx SpecContext, env ...corev1.EnvVar) ctrl.Request {
		kb := &kpackv1alpha2.Build{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "image-build-", Labels: map[string]string{kpackv1alpha2.BuildNumberLabel: "2"}},
			Spec:       kpackv1alpha2.BuildSpec{Tags: []string{"registry.local/app"}, Env: env},
		}
		Expect(k8s.Create(ctx, kb)).To(Succeed())
		return ctrl.Request{NamespacedName: client.ObjectKeyFromObject(kb)}
	}
	cfBuilds := func(ctx SpecContext) []cfv1alpha1.CFBuild {
		list := &cfv1alpha1.CFBuildList{}
		Expect(k8s.List(ctx, list, client.InNamespace("default"))).To(Succeed())
		return list.Items
	}

	It("leaves alone a kpack Build of an Image that cf-hnc did not make", func(ctx SpecContext) {
		Expect(r.Reconcile(ctx, kpackBuild(ctx))).To(Equal(ctrl.Result{}))
		Expect(cfBuilds(ctx)).To(BeEmpty())
	})

	It("leaves alone a kpack Build whose CFBuild was deleted", func(ctx SpecContext) {
		Expect(r.Reconcile(ctx, kpackBuild(ctx, corev1.EnvVar{Name: cfv1alpha1.BuildGUIDEnv, Value: "gone"}))).To(Equal(ctrl.Result{}))
		Expect(cfBuilds(ctx)).To(BeEmpty())
	})
})
