package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"
	"sigs.k8s.io/yaml"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// The quota specs place config/samples' org and space quotas once in an org of their own, with
// limits small enough to reach, and act as that org's tenants: a space developer floods its
// space, an org manager its org. The quotas stay in that org, so that no other spec's space is
// bounded by them.
var _ = Describe("Quotas placed once in an org", Ordered, ContinueOnFailure, Label("local"), func() {
	const (
		spaceQuota = "cf-space-quota"
		orgQuota   = "cf-org-quota"
	)
	var (
		org, existingSpace, newSpace string
		dev                          client.Client
	)

	BeforeAll(func(ctx SpecContext) {
		org = createOrg(ctx, "quotas-"+string(uuid.NewUUID())[:8])
		placeOrgRegistry(ctx, org)
		existingSpace = createSpace(ctx, org, "existing")

		By("placing the samples in the org, with limits a test can reach")
		placeQuota(ctx, "org_quota.yaml", org, corev1.ResourceList{
			"count/cfspaces.workloads.cloudfoundry.org":    resource.MustParse("3"),
			"count/rolebindings.rbac.authorization.k8s.io": resource.MustParse("8"),
		})
		placeQuota(ctx, "space_quota.yaml", org, corev1.ResourceList{
			// One build pod (the manager's default --build-memory, 1Gi) or two 512 MiB instances.
			corev1.ResourceLimitsMemory:                    resource.MustParse("1280Mi"),
			corev1.ResourceRequestsMemory:                  resource.MustParse("1280Mi"),
			corev1.ResourcePods:                            resource.MustParse("5"),
			"count/cfapps.workloads.cloudfoundry.org":      resource.MustParse("3"),
			"count/cfprocesses.workloads.cloudfoundry.org": resource.MustParse("10"),
			"count/cfpackages.workloads.cloudfoundry.org":  resource.MustParse("3"),
			"count/cfbuilds.workloads.cloudfoundry.org":    resource.MustParse("3"),
			"count/secrets":                                resource.MustParse("8"),
			"count/configmaps":                             resource.MustParse("4"),
			"count/serviceaccounts":                        resource.MustParse("10"),
		})
		newSpace = createSpace(ctx, org, "new")
		Eventually(buildReady(ctx, org, newSpace)).Should(HaveField("Status", metav1.ConditionTrue))
		dev = spaceDeveloper(ctx, "quota-dev-"+string(uuid.NewUUID())[:8], newSpace)
	}, NodeTimeout(3*time.Minute))

	It("bound the org and every space in it, the existing and the new, with the apiserver's own quota", func(ctx SpecContext) {
		for _, name := range []string{orgQuota, spaceQuota} {
			source := &corev1.ResourceQuota{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: name}, source)).To(Succeed())
			for _, ns := range []string{org, existingSpace, newSpace} {
				Eventually(inForce(ctx, ns, name), 30*time.Second).Should(Equal(source.Spec.Hard), "%s is enforced in %s", name, ns)
			}
			copied := &corev1.ResourceQuota{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: newSpace, Name: name}, copied)).To(Succeed())
			Expect(copied.Labels).To(HaveKeyWithValue(hncv1alpha2.LabelInheritedFrom, org), "HNC copied it from the org")
		}
	})

	DescribeTable("refuse a space developer's objects beyond the space's counts, with the apiserver's message",
		func(ctx SpecContext, counted corev1.ResourceName, object func() client.Object) {
			limit := spaceLimit(ctx, newSpace, counted)
			var refused error
			for i := 0; i <= int(limit) && refused == nil; i++ {
				refused = dev.Create(ctx, object())
			}
			Expect(refused).To(MatchError(ContainSubstring("exceeded quota: "+spaceQuota)), "a create beyond %d is refused", limit)
			Expect(refused).To(And(BeForbidden(), MatchError(ContainSubstring("limited: "+string(counted)))))
			Expect(used(ctx, newSpace, spaceQuota, counted)).To(BeEquivalentTo(limit), "the space holds exactly its limit")
		},
		Entry("Secrets (H1: HNC caches every Secret)", corev1.ResourceName("count/secrets"), func() client.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: newSpace, Name: "flood-" + string(uuid.NewUUID())[:8]},
				Data: map[string][]byte{"blob": []byte("x")}}
		}),
		Entry("ConfigMaps", corev1.ResourceName("count/configmaps"), func() client.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: newSpace, Name: "flood-" + string(uuid.NewUUID())[:8]}}
		}),
		Entry("CFApps (H2: cf-hnc caches every CF object)", corev1.ResourceName("count/cfapps.workloads.cloudfoundry.org"), func() client.Object {
			return newApp(newSpace, defaultLifecycle)
		}),
		Entry("CFPackages", corev1.ResourceName("count/cfpackages.workloads.cloudfoundry.org"), func() client.Object {
			return &cfv1alpha1.CFPackage{
				ObjectMeta: metav1.ObjectMeta{Namespace: newSpace, Name: string(uuid.NewUUID())},
				Spec: cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: "flood"},
					Source: cfv1alpha1.PackageSource{Registry: cfv1alpha1.Registry{Image: "registry.invalid/flood"}}},
			}
		}),
		Entry("CFBuilds (H2: builds that wait for a package that never comes)", corev1.ResourceName("count/cfbuilds.workloads.cloudfoundry.org"), func() client.Object {
			return newBuild(&cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: newSpace, Name: "flood"}}, "missing")
		}),
	)

	It("keep HNC and cf-hnc serving the other orgs while a tenant floods its space (H1)", func(ctx SpecContext) {
		blob := func(size int) *corev1.Secret {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: newSpace, Name: "blob-" + string(uuid.NewUUID())[:8]},
				Data: map[string][]byte{"blob": make([]byte, size)}}
		}
		Expect(dev.Create(ctx, blob(900*1024))).To(MatchError(ContainSubstring("at most 16 KiB")), "no Secret of almost 1 MiB reaches HNC's cache")
		refused := 0
		for i := 0; i < 20; i++ {
			if err := dev.Create(ctx, blob(16*1024-len("blob"))); err != nil {
				Expect(err).To(MatchError(ContainSubstring("exceeded quota: " + spaceQuota)))
				refused++
			}
		}
		Expect(refused).To(BeNumerically(">=", 20-int(spaceLimit(ctx, newSpace, "count/secrets"))),
			"no more Secrets of the largest size than the space's count reach HNC's cache")
		By("another org gets a space that can build, as HNC and cf-hnc go on serving it")
		_, other := buildingSpace(ctx, "quota-neighbour")
		Expect(other).NotTo(BeEmpty())
	}, SpecTimeout(3*time.Minute))

	It("does not run an app instance beyond the space's memory, and the process and the StatefulSet's events say why", func(ctx SpecContext) {
		app := deployedAppOf(ctx, org, existingSpace, staticSource)
		DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, app)).To(Succeed()) }) // nothing left running on the node
		web := webProcess(ctx, app)
		update(ctx, web, func() { web.Spec.Instances, web.Spec.MemoryMB = 3, 512 })
		update(ctx, app, func() { app.Spec.DesiredState = cfv1alpha1.StartedState })

		statefulSet := &appsv1.StatefulSet{}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(web), statefulSet) }).Should(Succeed())
		Eventually(events(ctx, statefulSet), starting).Should(ContainElement(And(
			HaveField("Reason", "FailedCreate"), HaveField("Note", ContainSubstring("exceeded quota: "+spaceQuota)),
			HaveField("Note", ContainSubstring("limited: limits.memory=1280Mi")))))
		Eventually(func() int { return readyInstances(ctx, web) }, starting).Should(Equal(2), "two 512 MiB instances fit in 1280Mi")
		Consistently(func() []corev1.Pod { return instancePods(ctx, web) }, "3s").Should(HaveLen(2), "the third is never made")
		Eventually(running(ctx, web)).Should(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", cfv1alpha1.QuotaExceededReason), HaveField("Message", And(HavePrefix("2 of 3"),
				MatchRegexp(`; instance [0-2] DOWN \(QuotaExceeded\); ResourceQuota `+spaceQuota+` allows limits\.memory 1280Mi`)))),
			"the StatefulSet makes its pods in parallel: any one of the three may be the one refused")
	})

	It("is read, but cannot be changed, deleted or outdone, by a space developer", func(ctx SpecContext) {
		quota := &corev1.ResourceQuota{}
		Expect(dev.Get(ctx, client.ObjectKey{Namespace: newSpace, Name: spaceQuota}, quota)).To(Succeed(), "members see their usage")
		quota.Spec.Hard["count/secrets"] = resource.MustParse("1000")
		Expect(dev.Update(ctx, quota)).To(BeForbidden())
		Expect(dev.Delete(ctx, quota)).To(BeForbidden())
		Expect(dev.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: newSpace, Name: "mine"}})).To(BeForbidden())
		Expect(inForce(ctx, newSpace, spaceQuota)()).To(HaveKeyWithValue(corev1.ResourceName("count/secrets"), resource.MustParse("8")))
	})

	It("refuse an org manager's spaces and grants beyond the org's, and it cannot delete the org's quota", func(ctx SpecContext) {
		manager := orgManager(ctx, "quota-manager-"+string(uuid.NewUUID())[:8], org)
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8s.DeleteAllOf(ctx, &rbacv1.RoleBinding{}, client.InNamespace(org), client.HasLabels{"e2e-flood"})).To(Succeed())
		})
		floodOrg(ctx, manager, org, "count/cfspaces.workloads.cloudfoundry.org", func() client.Object {
			return newSpaceObject(org, "flood-"+string(uuid.NewUUID())[:8])
		})
		lastGrant := floodOrg(ctx, manager, org, "count/rolebindings.rbac.authorization.k8s.io", func() client.Object {
			return &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "flood-" + string(uuid.NewUUID())[:8], Labels: map[string]string{"e2e-flood": ""}},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cf-org-user"},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "someone-" + string(uuid.NewUUID())[:8]}},
			}
		})
		By("counting HNC's copies in each space: the space with a binding of its own has no room for the org's last")
		Eventually(events(ctx, lastGrant)).Should(ContainElement(And(HaveField("Reason", "CannotPropagateObject"),
			HaveField("Note", ContainSubstring(newSpace)), HaveField("Note", ContainSubstring("exceeded quota: "+orgQuota)))))

		Expect(manager.Delete(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: orgQuota}})).To(BeForbidden())
	})
})

// floodOrg creates objects in an org as c until the org's quota refuses one, checks that the
// apiserver says why and that the org holds exactly its limit, and returns the last object made.
func floodOrg(ctx SpecContext, c client.Client, org string, counted corev1.ResourceName, object func() client.Object) client.Object {
	GinkgoHelper()
	limit := limitOf(ctx, org, "cf-org-quota", counted)
	var last client.Object
	var refused error
	for i := 0; i <= int(limit) && refused == nil; i++ {
		obj := object()
		if refused = c.Create(ctx, obj); refused == nil {
			last = obj
		}
	}
	Expect(refused).To(MatchError(ContainSubstring("exceeded quota: cf-org-quota")), "a create of %s beyond %d is refused", counted, limit)
	Expect(refused).To(And(BeForbidden(), MatchError(ContainSubstring("limited: "+string(counted)))))
	Expect(used(ctx, org, "cf-org-quota", counted)).To(BeEquivalentTo(limit), string(counted))
	Expect(last).NotTo(BeNil(), "the org had room for one %s at least", counted)
	return last
}

// placeQuota is an operator placing a quota of config/samples in an org, with hard as its limits.
func placeQuota(ctx SpecContext, sample, org string, hard corev1.ResourceList) {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(projectConfig(), "samples", sample))
	Expect(err).NotTo(HaveOccurred())
	quota := &corev1.ResourceQuota{}
	Expect(yaml.UnmarshalStrict(data, quota)).To(Succeed())
	Expect(quota.Annotations).To(HaveKeyWithValue(hncv1alpha2.AnnotationAllSelector, "true"), "%s propagates to every space", sample)
	Expect(quota.Spec.Hard).To(HaveLen(len(hard)), "the test sets every limit of %s", sample)
	for name := range hard {
		Expect(quota.Spec.Hard).To(HaveKey(name), "%s limits %s", sample, name)
	}
	quota.Namespace, quota.Spec.Hard = org, hard
	Expect(k8s.Create(ctx, quota)).To(Succeed())
}

// inForce returns the limits of a quota that the apiserver enforces in a namespace: those in its
// status, where kube-controller-manager puts them with their usage. Until it has, the quota
// holds nothing.
func inForce(ctx context.Context, namespace, name string) func() corev1.ResourceList {
	return func() corev1.ResourceList {
		quota := &corev1.ResourceQuota{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, quota); err != nil {
			return nil
		}
		enforced := corev1.ResourceList{}
		for resourceName, limit := range quota.Status.Hard {
			if _, counted := quota.Status.Used[resourceName]; counted {
				enforced[resourceName] = limit
			}
		}
		return enforced
	}
}

func used(ctx context.Context, namespace, quota string, counted corev1.ResourceName) int64 {
	GinkgoHelper()
	var n int64
	// The usage is recomputed after each create; the refused one changes nothing.
	Eventually(func(g Gomega) {
		rq := &corev1.ResourceQuota{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: quota}, rq)).To(Succeed())
		n = rq.Status.Used.Name(counted, resource.DecimalSI).Value()
		g.Expect(n).To(Equal(rq.Status.Hard.Name(counted, resource.DecimalSI).Value()))
	}).Should(Succeed())
	return n
}

func spaceLimit(ctx context.Context, space string, counted corev1.ResourceName) int64 {
	return limitOf(ctx, space, "cf-space-quota", counted)
}

func limitOf(ctx context.Context, namespace, quota string, counted corev1.ResourceName) int64 {
	GinkgoHelper()
	rq := &corev1.ResourceQuota{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: quota}, rq)).To(Succeed())
	Expect(rq.Spec.Hard).To(HaveKey(counted))
	return rq.Spec.Hard.Name(counted, resource.DecimalSI).Value()
}
