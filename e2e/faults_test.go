package e2e_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// managerLease is the lease the manager's replicas elect their leader with.
func managerLease(ctx SpecContext) *coordinationv1.Lease {
	GinkgoHelper()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: install.Namespace, Name: "cf-hnc.workloads.cloudfoundry.org"}}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(lease), lease)).To(Succeed())
	Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
	Expect(lease.Spec.RenewTime).NotTo(BeNil())
	return lease
}

// The fault specs break a part of the control plane in the middle of cf-hnc's work and expect
// it to lose nothing, make nothing twice and converge without anybody's help. `make
// test-faults` runs them alone; `make test` runs them with everything else.
var _ = Describe("Faults", Label("faults"), func() {
	// restartManager makes sure every replica of the manager runs again after a spec that
	// stopped or killed it.
	restartManager := func(ctx SpecContext) {
		Expect(cp.StartManager(ctx)).To(Succeed())
	}

	It("makes every space of a burst, and lets each build, after HNC was down in the middle of it; pods and CF apps are written in a space meanwhile", func(ctx SpecContext) {
		// As many as the default org quota allows (config/quotas).
		const spaces = 20
		existing := createSpace(ctx, createOrg(ctx, "hnc-down-"+string(uuid.NewUUID())[:8]), "dev")
		org := createOrg(ctx, "burst-"+string(uuid.NewUUID())[:8])
		placeOrgRegistry(ctx, org)
		for i := range spaces {
			Expect(k8s.Create(ctx, newSpaceObject(org, fmt.Sprintf("space-%03d", i)))).To(Succeed())
		}
		lease := managerLease(ctx)
		Expect(cp.StopComponent(ctx, "hnc-manager")).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			if cp.Healthy() != nil {
				Expect(cp.StartComponent(ctx, "hnc-manager")).To(Succeed())
			}
		})
		By("leaving HNC down while cf-hnc keeps trying, and keeps leading: HNC's webhooks, which fail closed, must not reach cf-hnc's own namespace")
		time.Sleep(15 * time.Second)
		renewed := managerLease(ctx)
		Expect(renewed.Spec.HolderIdentity).To(Equal(lease.Spec.HolderIdentity))
		Expect(renewed.Spec.RenewTime.After(lease.Spec.RenewTime.Add(10*time.Second))).To(BeTrue(),
			"the manager renewed its lease while HNC was down: last renewed %s, before %s", renewed.Spec.RenewTime, lease.Spec.RenewTime)
		By("an instance's pod and a developer's app written in a space meanwhile, since config/hnc calls HNC's object webhook only for the kinds HNC propagates; a Secret waits for HNC, which fails closed for those")
		Expect(k8s.Create(ctx, neverScheduledPod(existing))).To(Succeed())
		Expect(k8s.Create(ctx, newApp(existing, defaultLifecycle))).To(Succeed())
		secret := func() *corev1.Secret {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: existing, Name: "written-while-hnc-is-down"}}
		}
		Expect(k8s.Create(ctx, secret())).To(MatchError(ContainSubstring(`failed calling webhook "objects.hnc.x-k8s.io"`)))
		By("an operator changing the default Builder's push credentials meanwhile: the builder namespace is outside HNC's tree, and its writes must not wait for HNC either")
		credentials := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: controlplane.BuilderNamespace, Name: "cf-builder-registry"}, credentials)).To(Succeed())
		update(ctx, credentials, func() { metav1.SetMetaDataAnnotation(&credentials.ObjectMeta, "cf-hnc.test/rotated", org) })
		Expect(cp.StartComponent(ctx, "hnc-manager")).To(Succeed())
		Eventually(func() error { return k8s.Create(ctx, secret()) }).Should(Succeed())

		Eventually(func(g Gomega) {
			list := &cfv1alpha1.CFSpaceList{}
			g.Expect(k8s.List(ctx, list, client.InNamespace(org))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(spaces))
			for _, s := range list.Items {
				g.Expect(meta.IsStatusConditionTrue(s.Status.Conditions, cfv1alpha1.BuildReadyCondition)).To(BeTrue(),
					"space %s: %v", s.Spec.DisplayName, meta.FindStatusCondition(s.Status.Conditions, cfv1alpha1.BuildReadyCondition))
			}
		}, 5*time.Minute, time.Second).Should(Succeed())
		namespaces := &corev1.NamespaceList{}
		Expect(k8s.List(ctx, namespaces, client.MatchingLabels{cfv1alpha1.OrgGUIDLabel: org}, client.HasLabels{cfv1alpha1.SpaceGUIDLabel})).To(Succeed())
		Expect(namespaces.Items).To(HaveLen(spaces), "one namespace per space, none twice")
	})

	It("finishes a build, with one droplet, when kpack and the apiserver restart in the middle of it", func(ctx SpecContext) {
		org := createOrg(ctx, "restart-"+string(uuid.NewUUID())[:8])
		space := createSpace(ctx, org, "dev")
		placeOrgRegistry(ctx, org)
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
		app := createApp(ctx, space, defaultLifecycle)
		build := stage(ctx, org, app)
		Eventually(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(build), build)).To(Succeed())
			return build.Status.KpackBuild
		}).ShouldNot(BeEmpty(), "kpack has started the build")

		Expect(cp.StopComponent(ctx, "kpack-controller")).To(Succeed())
		Expect(cp.RestartAPIServer(ctx)).To(Succeed())
		Expect(cp.StartComponent(ctx, "kpack-controller")).To(Succeed())

		Eventually(succeeded(ctx, build), 3*time.Minute).Should(HaveField("Status", metav1.ConditionTrue))
		kpackBuilds := &kpackv1alpha2.BuildList{}
		Expect(k8s.List(ctx, kpackBuilds, client.InNamespace(space), client.MatchingLabels{kpackv1alpha2.ImageLabel: app.Name})).To(Succeed())
		Expect(kpackBuilds.Items).To(HaveLen(1), "one kpack build for one push")
		builds := &cfv1alpha1.CFBuildList{}
		Expect(k8s.List(ctx, builds, client.InNamespace(space))).To(Succeed())
		Expect(builds.Items).To(HaveLen(1))
	})

	DescribeTable("ends a build that was running on the node when a part of the node was killed: with one droplet, or failed with the reason, nothing left running",
		func(ctx SpecContext, component string) {
			org, space := buildingSpace(ctx, "node-"+component)
			app := createApp(ctx, space, defaultLifecycle)
			build := stage(ctx, org, app)
			Eventually(func() []string {
				Expect(k8s.Get(ctx, client.ObjectKeyFromObject(build), build)).To(Succeed())
				if build.Status.KpackBuild == "" {
					return nil
				}
				kb := &kpackv1alpha2.Build{}
				Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: build.Status.KpackBuild}, kb)).To(Succeed())
				return kb.Status.StepsCompleted
			}, time.Minute, 50*time.Millisecond).Should(ContainElement("prepare"), "the build pod runs")
			platform, err := cp.PlatformPods(ctx)
			Expect(err).NotTo(HaveOccurred())

			Expect(cp.KillComponent(ctx, component)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) {
				if cp.Healthy() != nil {
					Expect(cp.StartComponent(ctx, component)).To(Succeed())
				}
			})
			time.Sleep(3 * time.Second)
			Expect(cp.StartComponent(ctx, component)).To(Succeed())

			Eventually(succeeded(ctx, build), 3*time.Minute).Should(Or(
				HaveField("Status", metav1.ConditionTrue),
				And(HaveField("Status", metav1.ConditionFalse), HaveField("Message", MatchRegexp(`kpack build \S+ failed\S* \S+`)))))
			if meta.IsStatusConditionTrue(build.Status.Conditions, cfv1alpha1.SucceededCondition) {
				Expect(build.Status.Droplet).NotTo(BeNil())
				Expect(lifecycleMetadata(build.Status.Droplet.Registry.Image, org).Buildpacks).NotTo(BeEmpty())
			}
			Eventually(func() []corev1.PodPhase {
				pods := &corev1.PodList{}
				Expect(k8s.List(ctx, pods, client.InNamespace(space))).To(Succeed())
				var phases []corev1.PodPhase
				for _, p := range pods.Items {
					phases = append(phases, p.Status.Phase)
				}
				return phases
			}, time.Minute).Should(HaveEach(BeElementOf(corev1.PodSucceeded, corev1.PodFailed)), "no build pod is left running")

			now, err := cp.PlatformPods(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(restartsOf(now)).To(Equal(restartsOf(platform)), "the platform's pods ran on, none restarted")

			By("building again on the node as it is now")
			again := stage(ctx, org, app)
			Eventually(succeeded(ctx, again), 2*time.Minute).Should(HaveField("Status", metav1.ConditionTrue))
		},
		Entry("the kubelet", "kubelet"),
		Entry("containerd", "containerd"),
	)

	It("says that a build waits for a node while the node's disk is full, and builds it once there is room", func(ctx SpecContext) {
		org, space := buildingSpace(ctx, "disk")
		app := createApp(ctx, space, defaultLifecycle)
		Expect(cp.SetNodeDiskPressure(ctx, true)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(cp.SetNodeDiskPressure(ctx, false)).To(Succeed()) })

		build := stage(ctx, org, app)
		Eventually(succeeded(ctx, build), time.Minute).Should(And(
			HaveField("Status", metav1.ConditionUnknown),
			HaveField("Message", And(ContainSubstring("waits for a node"), ContainSubstring("untolerated taint")))),
			"the scheduler's words: the node's disk-pressure taint keeps the pod off it")

		Expect(cp.SetNodeDiskPressure(ctx, false)).To(Succeed())
		Eventually(succeeded(ctx, build), 2*time.Minute).Should(HaveField("Status", metav1.ConditionTrue))
	})

	It("deletes an org with its spaces when the manager is killed in the middle of the deletion", func(ctx SpecContext) {
		DeferCleanup(restartManager)
		org := createOrg(ctx, "doomed-"+string(uuid.NewUUID())[:8])
		spaces := []string{createSpace(ctx, org, "dev"), createSpace(ctx, org, "prod"), createSpace(ctx, org, "staging")}
		cfOrg := &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: org}}
		Expect(k8s.Delete(ctx, cfOrg)).To(Succeed())
		Expect(cp.CrashManager(ctx)).To(Succeed())

		for _, name := range append(spaces, org) {
			Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{}) }, 2*time.Minute).
				Should(BeNotFound(), "namespace %s", name)
		}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(cfOrg), cfOrg) }).Should(BeNotFound())
	})

	It("takes the lease back at once when the manager is killed and the kubelet starts it again in its pod", func(ctx SpecContext) {
		DeferCleanup(restartManager)
		before := managerLease(ctx)
		leader, err := cp.ManagerLeader(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(cp.CrashManager(ctx)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(leader), leader)).To(Succeed())
			g.Expect(leader.Status.ContainerStatuses).To(ContainElement(And(
				HaveField("Name", install.ManagerContainer), HaveField("RestartCount", BeNumerically(">", 0)), HaveField("Ready", BeTrue()))))
		}, time.Minute).Should(Succeed(), "the kubelet started the container again in the same pod")

		createOrg(ctx, "restarted-"+string(uuid.NewUUID())[:8]) // Ready: the restarted manager leads
		after := managerLease(ctx)
		Expect(*after.Spec.HolderIdentity).To(Equal(*before.Spec.HolderIdentity), "the same pod holds it under the same name")
		Expect(*after.Spec.LeaseTransitions).To(Equal(*before.Spec.LeaseTransitions),
			"renewed by its holder, not taken over once the old lease expired")
	})

	It("lets an administrator remove a finalizer while the manager is down", func(ctx SpecContext) {
		DeferCleanup(restartManager)
		org := createOrg(ctx, "stuck-"+string(uuid.NewUUID())[:8])
		cfOrg := &cfv1alpha1.CFOrg{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: root, Name: org}, cfOrg)).To(Succeed())
		Expect(cfOrg.Finalizers).NotTo(BeEmpty())
		Expect(cp.StopManager(ctx)).To(Succeed())

		update(ctx, cfOrg, func() { cfOrg.Finalizers = nil })
		By("renaming, which the webhooks label and check, is refused while the manager is down")
		cfOrg.Spec.DisplayName = "renamed-" + org
		Expect(k8s.Update(ctx, cfOrg)).To(MatchError(MatchRegexp(`failed calling webhook "[mv]cforg\.workloads\.cloudfoundry\.org"`)))
	})

	It("refuses CF writes, naming its webhook's Service, while every manager pod is down for 30 s, and takes up what was written before", func(ctx SpecContext) {
		DeferCleanup(restartManager)
		org := createOrg(ctx, "outage-"+string(uuid.NewUUID())[:8])
		placeOrgRegistry(ctx, org)
		before := newSpaceObject(org, "before")
		Expect(k8s.Create(ctx, before)).To(Succeed())
		Expect(cp.StopManager(ctx)).To(Succeed())

		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Second) {
			Expect(k8s.Create(ctx, newSpaceObject(org, "during"))).To(MatchError(And(
				ContainSubstring(`failed calling webhook "vcfspace.workloads.cloudfoundry.org"`), ContainSubstring("cf-hnc-webhook-service"))))
		}
		Expect(cp.StartManager(ctx)).To(Succeed())
		Eventually(buildReady(ctx, org, before.Name), time.Minute).Should(HaveField("Status", metav1.ConditionTrue))
		after := newSpaceObject(org, "after")
		Expect(k8s.Create(ctx, after)).To(Succeed())
		Eventually(buildReady(ctx, org, after.Name), time.Minute).Should(HaveField("Status", metav1.ConditionTrue))
	})

	It("hands the work to the second replica when the leader's pod is deleted in the middle of it", func(ctx SpecContext) {
		DeferCleanup(restartManager)
		lease := managerLease(ctx)

		const spaces = 20
		org := createOrg(ctx, "failover-"+string(uuid.NewUUID())[:8])
		placeOrgRegistry(ctx, org)
		for i := range spaces {
			Expect(k8s.Create(ctx, newSpaceObject(org, fmt.Sprintf("space-%02d", i)))).To(Succeed())
		}
		leader, err := cp.DeleteManagerLeader(ctx)
		Expect(err).NotTo(HaveOccurred())

		Eventually(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(lease), lease)).To(Succeed())
			return *lease.Spec.HolderIdentity
		}, time.Minute).ShouldNot(Equal(leader), "the replica took the lease over")
		Eventually(func(g Gomega) {
			list := &cfv1alpha1.CFSpaceList{}
			g.Expect(k8s.List(ctx, list, client.InNamespace(org))).To(Succeed())
			for _, s := range list.Items {
				g.Expect(meta.IsStatusConditionTrue(s.Status.Conditions, cfv1alpha1.BuildReadyCondition)).To(BeTrue(), "space %s", s.Spec.DisplayName)
			}
		}, 2*time.Minute, time.Second).Should(Succeed())
		namespaces := &corev1.NamespaceList{}
		Expect(k8s.List(ctx, namespaces, client.MatchingLabels{cfv1alpha1.OrgGUIDLabel: org}, client.HasLabels{cfv1alpha1.SpaceGUIDLabel})).To(Succeed())
		Expect(namespaces.Items).To(HaveLen(spaces), "one namespace per space, none twice")
	})
})

// buildingSpace is a new org with its registry and a space that can build.
func buildingSpace(ctx SpecContext, prefix string) (org, space string) {
	GinkgoHelper()
	org = createOrg(ctx, prefix+"-"+string(uuid.NewUUID())[:8])
	space = createSpace(ctx, org, "dev")
	placeOrgRegistry(ctx, org)
	Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
	return org, space
}

// neverScheduledPod is a pod as an app instance's is admitted in a space (the restricted Pod
// Security Standard, bounded resources), held back from the scheduler by a gate nobody lifts.
func neverScheduledPod(space string) *corev1.Pod {
	bounded := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("16Mi")}
	return cftest.Restricted(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "instance-" + string(uuid.NewUUID())[:8]},
		Spec: corev1.PodSpec{
			SchedulingGates:              []corev1.PodSchedulingGate{{Name: "cf-hnc.test/never-scheduled"}},
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.invalid/never-pulled",
				Resources: corev1.ResourceRequirements{Requests: bounded, Limits: bounded},
			}},
		},
	})
}
