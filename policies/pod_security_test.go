package policies_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Review 3, N5 and issue 38: the apiserver itself, not only cf-hnc's policies, keeps
// privileged pods, host namespaces and hostPaths out of the CF tree (config/policies/
// pod-security.yaml), without touching any namespace outside it.
var _ = Describe("The restricted Pod Security Standard in the CF tree", func() {
	// bounded is what the space's default quota asks of every pod.
	bounded := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	restricted := func(namespace string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "instance"}, Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.local/droplet",
				Resources:       corev1.ResourceRequirements{Requests: bounded, Limits: bounded},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		}}
	}
	privileged := func(namespace string) *corev1.Pod {
		pod := restricted(namespace)
		pod.Spec.HostPID = true
		pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		pod.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		return pod
	}
	namespace := func(ctx SpecContext, name string) *corev1.Namespace {
		GinkgoHelper()
		ns := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, ns)).To(Succeed())
		return ns
	}
	enforced := And(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"),
		HaveKeyWithValue("pod-security.kubernetes.io/enforce-version", "latest"))

	It("is enforced in the root, every org and every space: a restricted pod is admitted, a privileged one refused", func(ctx SpecContext) {
		org := createOrg(ctx)
		space := createSpace(ctx, org)
		for _, name := range []string{root, org, space} {
			Eventually(func() map[string]string { return namespace(ctx, name).Labels }).Should(enforced, name)
		}
		Expect(k8s.Create(ctx, restricted(space), client.DryRunAll)).To(Succeed())
		Expect(k8s.Create(ctx, privileged(space), client.DryRunAll)).To(MatchError(ContainSubstring(`violates PodSecurity "restricted:latest"`)))
	})

	It("cannot be relaxed in the tree, and leaves namespaces outside it as they are", func(ctx SpecContext) {
		space := createSpace(ctx, createOrg(ctx))
		ns := namespace(ctx, space)
		ns.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
		Expect(k8s.Update(ctx, ns)).To(Succeed())
		Expect(namespace(ctx, space).Labels).To(enforced, "set again on the write that relaxed it")
		Expect(k8s.Create(ctx, privileged(space), client.DryRunAll)).To(MatchError(ContainSubstring(`violates PodSecurity "restricted:latest"`)))

		outside := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "outside-" + string(uuid.NewUUID())[:8],
			Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}
		Expect(k8s.Create(ctx, outside)).To(Succeed())
		DeferCleanup(k8s.Delete, outside)
		Consistently(func() map[string]string { return namespace(ctx, outside.Name).Labels }, "3s").
			Should(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "baseline"), "HNC and cf-hnc leave it alone")
	})
})
