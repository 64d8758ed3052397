package e2e_test

import (
	"bytes"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/install"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
	cfrollout "code.cloudfoundry.org/cf-hnc/rollout"
)

// The confinement specs act as cf-hnc's manager, its ServiceAccount with the RBAC and the
// admission policies of config/default, and try the writes that its ClusterRole allows
// cluster-wide where the manager has no business: outside the CF tree, or beyond what it
// needs inside it (config/policies/manager.yaml).
var _ = Describe("The manager's confinement", Ordered, func() {
	var (
		space, outside string
		manager        client.Client
	)

	BeforeAll(func(ctx SpecContext) {
		space = createSpace(ctx, createOrg(ctx, "confined-"+string(uuid.NewUUID())[:8]), "dev")
		outside = createNamespace(ctx)
		manager = impersonating("system:serviceaccount:"+install.Namespace+":"+install.ServiceAccount,
			"system:serviceaccounts", "system:serviceaccounts:"+install.Namespace)
	})

	It("creates no kpack Build outside the CF tree, where it would run any builder image as any ServiceAccount", func(ctx SpecContext) {
		build := &kpackv1alpha2.Build{
			ObjectMeta: metav1.ObjectMeta{Namespace: outside, Name: "planted"},
			Spec: kpackv1alpha2.BuildSpec{
				Tags:               []string{"registry.example.org/planted"},
				ServiceAccountName: "default",
			},
		}
		build.Spec.Builder.Image = "registry.example.org/attacker/builder"
		Expect(manager.Create(ctx, build)).To(And(BeForbidden(), MatchError(ContainSubstring("cf-hnc writes only in the CF tree"))),
			"its ClusterRole lets it create Builds, for its own rebases")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(build), build)).To(BeNotFound())
	})

	It("changes no pod outside the CF tree, and nothing of a pod in it but the removal of its rollout gate", func(ctx SpecContext) {
		elsewhere := gatedPod(ctx, outside, cfrollout.Gate)
		Expect(liftGate(ctx, manager, elsewhere, cfrollout.Gate)).To(And(BeForbidden(),
			MatchError(ContainSubstring("cf-hnc writes only in the CF tree"))), "its ClusterRole lets it patch pods")

		inTree := gatedPod(ctx, space, cfrollout.Gate, "example.org/other")
		changed := inTree.DeepCopy()
		changed.Spec.Containers[0].Image = "registry.example.org/attacker/image"
		onlyTheRolloutGate := ContainSubstring("cf-hnc changes a pod only by removing its rollout gate")
		Expect(manager.Patch(ctx, changed, client.MergeFrom(inTree))).To(And(BeForbidden(), MatchError(onlyTheRolloutGate)),
			"a new image for a pod's container")
		Expect(liftGate(ctx, manager, inTree, "example.org/other")).To(And(BeForbidden(), MatchError(onlyTheRolloutGate)),
			"another component's gate")

		Expect(liftGate(ctx, manager, inTree, cfrollout.Gate)).To(Succeed(), "as the rollout lets a rebuild pod run")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(inTree), inTree)).To(Succeed())
		Expect(inTree.Spec.SchedulingGates).To(Equal([]corev1.PodSchedulingGate{{Name: "example.org/other"}}))
		Expect(inTree.Spec.Containers[0].Image).To(Equal("busybox"))
	})

	It("changes nothing of its webhook configurations but the CA bundle that it rotates", func(ctx SpecContext) {
		validating := &admissionv1.ValidatingWebhookConfiguration{}
		Expect(manager.Get(ctx, client.ObjectKey{Name: install.ValidatingWebhookConfiguration}, validating)).To(Succeed())
		mutating := &admissionv1.MutatingWebhookConfiguration{}
		Expect(manager.Get(ctx, client.ObjectKey{Name: install.MutatingWebhookConfiguration}, mutating)).To(Succeed())
		onlyTheCABundle := And(BeForbidden(), MatchError(ContainSubstring("cf-hnc changes its webhook configurations only by writing the CA bundle")))

		failOpen := validating.DeepCopy()
		failOpen.Webhooks[0].FailurePolicy = ptr.To(admissionv1.Ignore)
		Expect(manager.Update(ctx, failOpen)).To(onlyTheCABundle, "a webhook that fails open")
		everyPod := mutating.DeepCopy()
		gater := slices.IndexFunc(everyPod.Webhooks, func(w admissionv1.MutatingWebhook) bool { return w.Name == "mrebuildpod.workloads.cloudfoundry.org" })
		Expect(gater).NotTo(BeNumerically("<", 0))
		everyPod.Webhooks[gater].NamespaceSelector, everyPod.Webhooks[gater].MatchConditions = &metav1.LabelSelector{}, nil
		Expect(manager.Update(ctx, everyPod)).To(onlyTheCABundle, "a webhook called for every pod of the cluster")
		elsewhere := mutating.DeepCopy()
		elsewhere.Webhooks[gater].ClientConfig.URL = ptr.To("https://attacker.example.org/mutate-rebuild-pods")
		elsewhere.Webhooks[gater].ClientConfig.Service = nil
		Expect(manager.Update(ctx, elsewhere)).To(onlyTheCABundle, "a webhook served elsewhere")
		labelled := validating.DeepCopy()
		labelled.Labels = map[string]string{"example.org/planted": "true"}
		Expect(manager.Update(ctx, labelled)).To(onlyTheCABundle, "its metadata")

		By("writing the CA bundle, as its certificate rotation does: the same CA twice, then once again")
		caBundles := func(c *admissionv1.MutatingWebhookConfiguration) [][]byte {
			var bundles [][]byte
			for _, w := range c.Webhooks {
				bundles = append(bundles, w.ClientConfig.CABundle)
			}
			return bundles
		}
		rotated := caBundles(mutating)
		writeCABundles := func(bundle func(i int) []byte) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				Expect(manager.Get(ctx, client.ObjectKeyFromObject(mutating), mutating)).To(Succeed())
				for i := range mutating.Webhooks {
					mutating.Webhooks[i].ClientConfig.CABundle = bundle(i)
				}
				return manager.Update(ctx, mutating)
			})
		}
		Expect(writeCABundles(func(i int) []byte { return bytes.Repeat(rotated[i], 2) })).To(Succeed())
		Expect(writeCABundles(func(i int) []byte { return rotated[i] })).To(Succeed())
	})

	It("writes nothing in a namespace being deleted outside the CF tree", func(ctx SpecContext) {
		deleted := createNamespace(ctx)
		held := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: deleted, Name: "held", Finalizers: []string{"example.org/held"}}}
		Expect(k8s.Create(ctx, held)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8s.Patch(ctx, held, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
		})
		Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: deleted}})).To(Succeed())
		Eventually(func() *metav1.Time {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(held), held)).To(Succeed())
			return held.DeletionTimestamp
		}).ShouldNot(BeNil(), "the namespace is Terminating, held by the Secret's finalizer")

		notInTheTree := And(BeForbidden(), MatchError(ContainSubstring("cf-hnc writes only in the CF tree")))
		Expect(manager.Patch(ctx, held, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"example.org/planted":"true"}}}`)))).
			To(notInTheTree, "its ClusterRole lets it patch Secrets")
		Expect(manager.Patch(ctx, held, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).
			To(notInTheTree, "only CFOrgs' and CFSpaces' finalizers are its to remove there")
	})

	It("records no event outside the CF tree", func(ctx SpecContext) {
		event := &eventsv1.Event{
			ObjectMeta:          metav1.ObjectMeta{Namespace: outside, Name: "planted"},
			EventTime:           metav1.NowMicro(),
			ReportingController: "cf-hnc", ReportingInstance: "cf-hnc-manager",
			Type: corev1.EventTypeWarning, Reason: "Planted", Action: "Plant",
			Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: outside, Name: "planted"},
		}
		Expect(manager.Create(ctx, event)).To(And(BeForbidden(), MatchError(ContainSubstring("cf-hnc writes only in the CF tree"))),
			"its ClusterRole lets it record events, about CF objects")
	})
})

// Pods that pass for kpack's: anybody who may create pods somewhere could label them as kpack
// labels the pods of its Builds and annotate them as paced, and hold every rebuild of the
// foundation back (config/policies/rebuilds.yaml, builders/rollout.go).
var _ = Describe("Pods that pass for kpack's build pods", Ordered, func() {
	var outside string

	BeforeAll(func(ctx SpecContext) {
		outside = createNamespace(ctx)
	})

	It("are refused to anybody but kpack's controller", func(ctx SpecContext) {
		user := "carol-" + string(uuid.NewUUID())[:8]
		Expect(k8s.Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: outside, Name: "pod-maker"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "patch"}}},
		})).To(Succeed())
		Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: outside, Name: "pod-maker-" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-maker"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		})).To(Succeed())
		carol := impersonating(user)

		plain := passingPod(outside, "plain")
		delete(plain.Labels, kpackv1alpha2.BuildLabel)
		Eventually(func() error { return carol.Create(ctx, plain) }).Should(Succeed(), "such a pod without kpack's label, once RBAC has the binding")
		onlyKpack := And(BeForbidden(), MatchError(ContainSubstring("only kpack's controller makes pods labelled kpack.io/build")))
		for i := range 10 {
			Expect(carol.Create(ctx, passingPod(outside, fmt.Sprintf("hold-%d", i)))).To(onlyKpack)
		}
		labelled := plain.DeepCopy()
		labelled.Labels = map[string]string{kpackv1alpha2.BuildLabel: "hold"}
		Expect(carol.Patch(ctx, labelled, client.MergeFrom(plain))).To(onlyKpack, "nor the label added later")
	})

	It("hold no rebuild back, even when an administrator made them", func(ctx SpecContext) {
		By("ten running paced pods outside the CF tree, which would take every slot of the rollout (--max-concurrent-rebuilds=10)")
		for i := range 10 {
			held := passingPod(outside, fmt.Sprintf("held-%d", i))
			Expect(k8s.Create(ctx, held)).To(Succeed(), "an administrator passes the policy")
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, held))).To(Succeed()) })
		}

		By("a rebuild of an app, as kpack starts one after a buildpack upgrade")
		org, space := buildingSpace(ctx, "paced")
		app := createApp(ctx, space, defaultLifecycle)
		Eventually(succeeded(ctx, stage(ctx, org, app))).Should(HaveField("Status", metav1.ConditionTrue))
		staged := &kpackv1alpha2.BuildList{}
		Expect(k8s.List(ctx, staged, client.InNamespace(space))).To(Succeed())
		Expect(staged.Items).To(HaveLen(1))
		// kpack copies the app label onto the pod, which the manager caches by it.
		rebuild := &kpackv1alpha2.Build{
			ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "rebuild-" + string(uuid.NewUUID())[:8],
				Labels:      map[string]string{cfv1alpha1.AppLabel: app.Name},
				Annotations: map[string]string{kpackv1alpha2.BuildReasonAnnotation: "BUILDPACK"}},
			Spec: *staged.Items[0].Spec.DeepCopy(),
		}
		// Not one of the app's Image: no CFBuild environment (cf-hnc makes no CFBuild of it) and
		// a tag of its own.
		rebuild.Spec.Env = nil
		rebuild.Spec.Tags = []string{rebuild.Spec.Tags[0] + "-rebuild"}
		Expect(k8s.Create(ctx, rebuild)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, rebuild))).To(Succeed()) })

		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx, pods, client.InNamespace(space), client.MatchingLabels{kpackv1alpha2.BuildLabel: rebuild.Name})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			g.Expect(pods.Items[0].Annotations).To(HaveKey(cfrollout.PacedAnnotation), "cf-hnc's webhook gated it")
			g.Expect(pods.Items[0].Spec.SchedulingGates).To(BeEmpty(), "the rollout let it run")
		}).Should(Succeed())
	})
})

// impersonating returns a client that acts as user, in groups and system:authenticated.
func impersonating(user string, groups ...string) client.Client {
	GinkgoHelper()
	config := rest.CopyConfig(cp.Config)
	config.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(slices.Clip(groups), "system:authenticated")}
	c, err := client.New(config, client.Options{Scheme: cfscheme.New()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// gatedPod creates, as an administrator, a pod that waits for scheduling gates and is bound
// to no node that exists, so that it never runs.
func gatedPod(ctx SpecContext, namespace string, gates ...string) *corev1.Pod {
	GinkgoHelper()
	pod := unschedulablePod(namespace, "gated-"+string(uuid.NewUUID())[:8])
	for _, gate := range gates {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: gate})
	}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, pod))).To(Succeed()) })
	return pod
}

// liftGate removes a scheduling gate from a pod as the rollout does: a merge patch with the
// pod's resourceVersion.
func liftGate(ctx SpecContext, c client.Client, pod *corev1.Pod, gate string) error {
	lifted := pod.DeepCopy()
	lifted.Spec.SchedulingGates = slices.DeleteFunc(lifted.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == gate })
	return c.Patch(ctx, lifted, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{}))
}

// passingPod is a pod labelled and annotated as a paced kpack rebuild pod that runs (it has no
// gate) and never finishes (it is bound to no node that exists).
func passingPod(namespace, name string) *corev1.Pod {
	pod := unschedulablePod(namespace, name)
	pod.Labels = map[string]string{kpackv1alpha2.BuildLabel: name}
	pod.Annotations = map[string]string{kpackv1alpha2.BuildReasonAnnotation: "STACK", cfrollout.PacedAnnotation: "true"}
	return pod
}

func unschedulablePod(namespace, name string) *corev1.Pod {
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("16Mi")}
	return cftest.Restricted(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"example.org/no-such-node": "true"},
			Containers: []corev1.Container{{Name: "hold", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: small, Limits: small}}},
		},
	})
}
