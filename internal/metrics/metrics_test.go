package metrics_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/metrics"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

func TestMetrics(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "metrics (apiserver)")
}

// counting is the manager's client as manager.Options makes it, against a real apiserver.
var counting client.Client

var _ = BeforeSuite(func(ctx SpecContext) {
	cp, err := controlplane.Start(ctx, controlplane.Options{WorkDir: ".local/metrics"})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Stop)
	counting, err = metrics.NewCountingClient(cp.Config, client.Options{Scheme: cfscheme.New()})
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(3*time.Minute))

// writes reads cf_hnc_api_writes_total{verb,kind} from the registry the endpoint serves.
func writes(verb, kind string) float64 {
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, family := range families {
		if family.GetName() != metrics.APIWritesName {
			continue
		}
		for _, m := range family.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["verb"] == verb && labels["kind"] == kind {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// since returns how many writes of a verb and kind were counted after it was called.
func since() func(verb, kind string) float64 {
	start := map[[2]string]float64{}
	for _, verb := range []string{"create", "update", "patch", "patch_status", "apply", "delete"} {
		for _, kind := range []string{"ConfigMap", "Namespace"} {
			start[[2]string{verb, kind}] = writes(verb, kind)
		}
	}
	return func(verb, kind string) float64 { return writes(verb, kind) - start[[2]string{verb, kind}] }
}

var _ = Describe("the manager's client", func() {
	It("counts every accepted write by verb and kind, status writes and applies too, and no read", func(ctx SpecContext) {
		counted := since()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "metrics-" + string(uuid.NewUUID())[:8]}}
		Expect(counting.Create(ctx, ns)).To(Succeed())
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c"}}
		Expect(counting.Create(ctx, cm)).To(Succeed())
		cm.Data = map[string]string{"k": "v"}
		Expect(counting.Update(ctx, cm)).To(Succeed())
		Expect(counting.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"k":"w"}}`)))).To(Succeed())
		applied := &unstructured.Unstructured{}
		applied.SetAPIVersion("v1")
		applied.SetKind("ConfigMap")
		applied.SetNamespace(ns.Name)
		applied.SetName("applied")
		Expect(counting.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), client.FieldOwner("metrics-test"))).To(Succeed())
		Expect(counting.Status().Patch(ctx, ns, client.RawPatch(types.MergePatchType,
			[]byte(`{"status":{"conditions":[{"type":"Example","status":"True"}]}}`)))).To(Succeed())

		Expect(counted("create", "Namespace")).To(BeNumerically("==", 1))
		Expect(counted("create", "ConfigMap")).To(BeNumerically("==", 1))
		Expect(counted("update", "ConfigMap")).To(BeNumerically("==", 1))
		Expect(counted("patch", "ConfigMap")).To(BeNumerically("==", 1))
		Expect(counted("apply", "ConfigMap")).To(BeNumerically("==", 1))
		Expect(counted("patch_status", "Namespace")).To(BeNumerically("==", 1), "a status patch has a verb of its own")
		Expect(counted("patch", "Namespace")).To(BeNumerically("==", 0))

		By("not counting reads, nor writes that the apiserver refused")
		counted = since()
		Expect(counting.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		Expect(counting.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns.Name))).To(Succeed())
		Expect(counting.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "c"}})).NotTo(Succeed())
		Expect(counted("create", "ConfigMap")).To(BeNumerically("==", 0))

		Expect(counting.Delete(ctx, cm)).To(Succeed())
		Expect(counted("delete", "ConfigMap")).To(BeNumerically("==", 1))
	})
})

var _ = Describe("BuildReadyObserver", func() {
	It("observes each space created after the manager started once, at its first BuildReady", func() {
		observer := metrics.NewBuildReadyObserver()
		started := time.Now()
		before := observations()

		Expect(observer.BuildReady("old", started.Add(-time.Hour))).To(BeFalse(), "a space from before a restart")
		Expect(observer.BuildReady("new", started.Add(time.Second))).To(BeTrue())
		Expect(observations()).To(Equal(before + 1))
		Expect(observer.BuildReady("new", started.Add(time.Second))).To(BeFalse(), "BuildReady again after losing it")
		observer.Forget("new")
		Expect(observer.BuildReady("new", started.Add(time.Second))).To(BeTrue(), "a deleted space's UID is not kept")
		Expect(observations()).To(Equal(before + 2))
	})
})

// observations is the sample count of cf_hnc_space_build_ready_seconds on the manager's registry.
func observations() uint64 {
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, family := range families {
		if family.GetName() == metrics.SpaceBuildReadyName {
			return family.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	Fail(metrics.SpaceBuildReadyName + " is not on the manager's registry")
	return 0
}
