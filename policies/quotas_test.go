package policies_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"
	"sigs.k8s.io/yaml"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
)

var _ = Describe("The default quotas (N12)", Ordered, ContinueOnFailure, func() {
	var org, space string

	BeforeAll(func(ctx SpecContext) {
		org = createOrg(ctx)
		space = createSpace(ctx, org)
	})

	It("are copied by HNC from the root into every org and space, where the apiserver enforces them", func(ctx SpecContext) {
		for _, name := range []string{spaceQuota, orgQuota} {
			source := &corev1.ResourceQuota{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: root, Name: name}, source)).To(Succeed())
			Expect(source.Annotations).To(HaveKeyWithValue(hncv1alpha2.AnnotationAllSelector, "true"))
			for _, ns := range []string{org, space} {
				copied := &corev1.ResourceQuota{}
				Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, copied)).To(Succeed())
				Expect(copied.Labels).To(HaveKeyWithValue(hncv1alpha2.LabelInheritedFrom, root), "HNC copied %s into %s", name, ns)
				Expect(inForce(ctx, ns, name)()).To(Equal(source.Spec.Hard), "%s in force in %s", name, ns)
			}
		}
	})

	It("refuse a space developer's Secret beyond the space's count, and an org manager's spaces and grants beyond the org's", func(ctx SpecContext) {
		dev := spaceDeveloper(ctx, org, space)
		fill(ctx, dev, space, spaceQuota, "count/secrets", func() client.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: name("flood")}}
		})
		manager := orgManager(ctx, org)
		fill(ctx, manager, org, orgQuota, "count/cfspaces.workloads.cloudfoundry.org", func() client.Object {
			return &cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: string(uuid.NewUUID())},
				Spec: cfv1alpha1.CFSpaceSpec{DisplayName: name("space")}}
		})
		fill(ctx, manager, org, orgQuota, "count/rolebindings.rbac.authorization.k8s.io", func() client.Object {
			return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: name("grant")},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cf-org-user"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name("user")}}}
		})
	})

	It("make every pod of the tree state its memory and request CPU in proportion to it, which the quota bounds", func(ctx SpecContext) {
		pod := unschedulablePod(space, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")})
		pod.Spec.InitContainers = []corev1.Container{{Name: "step", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}}
		Expect(k8s.Create(ctx, cftest.Restricted(pod))).To(Succeed())
		Expect(pod.Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("125m"), "1 CPU per 8 GiB of 1 GiB")
		Expect(pod.Spec.InitContainers[0].Resources.Requests.Cpu().String()).To(Equal("15m"), "of 128 MiB")

		stated := unschedulablePod(space, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("1")})
		Expect(k8s.Create(ctx, stated)).To(Succeed())
		Expect(stated.Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("1"), "a stated request stays")

		Expect(k8s.Create(ctx, unschedulablePod(space, nil))).To(refusedWith("must specify", "cf-default-space-quota"))
		greedy := unschedulablePod(space, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("3")})
		Expect(k8s.Create(ctx, greedy)).To(refusedWith("exceeded quota: cf-default-space-quota", "limited: requests.cpu=2"))
	})
})

var _ = Describe("An operator's quotas for one org", Ordered, func() {
	var (
		tight, tightSpace, wide, wideSpace, other, otherSpace string
	)

	BeforeAll(func(ctx SpecContext) {
		tight, wide, other = createOrg(ctx), createOrg(ctx), createOrg(ctx)
		tightSpace, wideSpace, otherSpace = createSpace(ctx, tight), createSpace(ctx, wide), createSpace(ctx, other)
	})

	It("tighten the defaults where they are placed: every quota of a namespace holds, the tightest wins", func(ctx SpecContext) {
		placeSample(ctx, "space_quota.yaml", tight, corev1.ResourceList{"count/secrets": resource.MustParse("3")})
		Eventually(inForce(ctx, tightSpace, "cf-space-quota")).Should(HaveKeyWithValue(corev1.ResourceName("count/secrets"), resource.MustParse("3")))
		Expect(inForce(ctx, tightSpace, spaceQuota)()).NotTo(BeEmpty(), "the default holds beside it")
		dev := spaceDeveloper(ctx, tight, tightSpace)
		fill(ctx, dev, tightSpace, "cf-space-quota", "count/secrets", func() client.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tightSpace, Name: name("secret")}}
		})
	})

	It("give one org more than the defaults only once an operator takes it out of them, and leave the other orgs bounded", func(ctx SpecContext) {
		placeSample(ctx, "space_quota.yaml", wide, nil) // count/secrets 100, the default's 30
		placeSample(ctx, "org_quota.yaml", wide, nil)
		Eventually(inForce(ctx, wideSpace, "cf-space-quota")).ShouldNot(BeEmpty())
		dev := spaceDeveloper(ctx, wide, wideSpace)
		secret := func() client.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: wideSpace, Name: name("secret")}}
		}
		By("a wider quota of the org's own widens nothing while the default holds there")
		fill(ctx, dev, wideSpace, spaceQuota, "count/secrets", secret)
		defaults := limitOf(ctx, wideSpace, spaceQuota, "count/secrets")

		By("an org manager can neither take its org out of the defaults nor place or lift a quota")
		orgMgr := orgManager(ctx, wide)
		rootQuota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: spaceQuota}}
		Expect(orgMgr.Patch(ctx, rootQuota, exclude(wide))).To(BeForbidden())
		Expect(orgMgr.Delete(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: wide, Name: spaceQuota}})).To(BeForbidden())
		Expect(orgMgr.Delete(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: wide, Name: "cf-space-quota"}})).To(BeForbidden())
		Expect(orgMgr.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: wide, Name: "mine"}})).To(BeForbidden())
		Expect(dev.Delete(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: wideSpace, Name: spaceQuota}})).To(BeForbidden())

		By("the operator taking the org out of the root's defaults (HNC's tree selector)")
		for _, name := range []string{spaceQuota, orgQuota} {
			quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: name}}
			Expect(k8s.Patch(ctx, quota, exclude(wide))).To(Succeed())
			DeferCleanup(func(ctx SpecContext) {
				Expect(k8s.Patch(ctx, quota, client.RawPatch(types.MergePatchType,
					[]byte(`{"metadata":{"annotations":{"propagate.hnc.x-k8s.io/treeSelect":null,"propagate.hnc.x-k8s.io/all":"true"}}}`)))).To(Succeed())
				Eventually(inForce(ctx, wideSpace, name)).ShouldNot(BeEmpty(), "the default back in %s", wideSpace)
			})
			for _, ns := range []string{wide, wideSpace} {
				Eventually(func() error {
					return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ResourceQuota{})
				}).Should(BeNotFound(), "HNC removes its copy of %s from %s", name, ns)
			}
			Expect(inForce(ctx, otherSpace, name)()).NotTo(BeEmpty(), "%s still bounds the other orgs", name)
			Expect(inForce(ctx, other, name)()).NotTo(BeEmpty(), "%s still bounds the other orgs", name)
		}
		Expect(inForce(ctx, wideSpace, "cf-space-quota")()).To(HaveKeyWithValue(corev1.ResourceName("count/secrets"), resource.MustParse("100")),
			"the org's own quota stays")

		By("the org's own bounds, wider than the defaults, in force in its space")
		for range 10 {
			Expect(dev.Create(ctx, secret())).To(Succeed(), "beyond the default's count, within the org's 100")
		}
		Eventually(func() int64 { return used(ctx, wideSpace, "cf-space-quota", "count/secrets") }).Should(Equal(defaults + 10))
	})
})

// exclude is the operator's change that takes an org out of the root's defaults: HNC takes one
// of its selector annotations at a time.
func exclude(org string) client.Patch {
	return client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"propagate.hnc.x-k8s.io/all":null,"propagate.hnc.x-k8s.io/treeSelect":"!`+org+`"}}}`))
}

// placeSample is an operator placing a quota of config/samples in an org, with some limits
// changed.
func placeSample(ctx context.Context, sample, org string, hard corev1.ResourceList) {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(configDir, "samples", sample))
	Expect(err).NotTo(HaveOccurred())
	quota := &corev1.ResourceQuota{}
	Expect(yaml.UnmarshalStrict(data, quota)).To(Succeed())
	Expect(quota.Annotations).To(HaveKeyWithValue(hncv1alpha2.AnnotationAllSelector, "true"), "%s propagates to every space", sample)
	Expect(quota.Name).NotTo(BeElementOf(spaceQuota, orgQuota), "HNC would overwrite an org's quota named like the root's")
	quota.Namespace = org
	for resourceName, limit := range hard {
		quota.Spec.Hard[resourceName] = limit
	}
	Expect(k8s.Create(ctx, quota)).To(Succeed())
}

// fill creates objects as c until a quota refuses one, checks that it is that quota, for that
// resource, and that the namespace then holds exactly the limit: every create within it passed.
func fill(ctx context.Context, c client.Client, namespace, quota string, counted corev1.ResourceName, object func() client.Object) {
	GinkgoHelper()
	limit := limitOf(ctx, namespace, quota, counted)
	var refused error
	for i := int64(0); i <= limit && refused == nil; i++ {
		refused = c.Create(ctx, object())
	}
	Expect(refused).To(refusedWith("exceeded quota: "+quota, "limited: "+string(counted)), "a create beyond %d", limit)
	Eventually(func() int64 { return used(ctx, namespace, quota, counted) }).Should(Equal(limit), "every create within the limit passed")
}

func limitOf(ctx context.Context, namespace, quota string, counted corev1.ResourceName) int64 {
	GinkgoHelper()
	rq := &corev1.ResourceQuota{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: quota}, rq)).To(Succeed())
	Expect(rq.Spec.Hard).To(HaveKey(counted))
	return rq.Spec.Hard.Name(counted, resource.DecimalSI).Value()
}

func used(ctx context.Context, namespace, quota string, counted corev1.ResourceName) int64 {
	rq := &corev1.ResourceQuota{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: quota}, rq); err != nil {
		return -1
	}
	return rq.Status.Used.Name(counted, resource.DecimalSI).Value()
}

// unschedulablePod is a pod, as an administrator makes it, that no node takes, with requests and
// limits, restricted as the tree's Pod Security Standard asks.
func unschedulablePod(namespace string, resources corev1.ResourceList) *corev1.Pod {
	return cftest.Restricted(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name("hold")},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"example.org/no-such-node": "true"},
			Containers: []corev1.Container{{Name: "hold", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: resources, Limits: resources}}},
		},
	})
}

// BeNotFound matches a NotFound error.
func BeNotFound() OmegaMatcher {
	return WithTransform(func(err error) bool { return err != nil && client.IgnoreNotFound(err) == nil }, BeTrue())
}
