package processes_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

// The process reconcilers run as the manager runs them, against a real apiserver with
// kube-controller-manager, which makes the pods of the StatefulSets; no node runs them: the
// specs write the pods' status as the kubelet does.
var _ = Describe("running apps, against the apiserver", Ordered, func() {
	var (
		k8s   client.Client
		space string
	)

	BeforeAll(func(ctx SpecContext) {
		k8s = testenv.Start(ctx, "processes").Client
		space = testenv.CreateSpace(ctx, k8s, testenv.CreateOrg(ctx, k8s, "processes"), "dev")
	}, NodeTimeout(5*time.Minute))

	AfterEach(testenv.ExpectHealthy)

	running := func(ctx SpecContext, p *cfv1alpha1.CFProcess) func() *metav1.Condition {
		return func() *metav1.Condition {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
			return meta.FindStatusCondition(p.Status.Conditions, cfv1alpha1.RunningCondition)
		}
	}
	statefulSet := func(ctx SpecContext, p *cfv1alpha1.CFProcess) func() (*appsv1.StatefulSet, error) {
		return func() (*appsv1.StatefulSet, error) {
			s := &appsv1.StatefulSet{}
			return s, k8s.Get(ctx, client.ObjectKeyFromObject(p), s)
		}
	}
	// startedWithDroplet makes a started app that runs a staged droplet.
	startedWithDroplet := func(ctx SpecContext, name string) (*cfv1alpha1.CFApp, string) {
		app := cftest.CreateApp(ctx, k8s, space, name, cfv1alpha1.StartedState)
		droplet := cftest.StagedDroplet(ctx, k8s, space, app.Name)
		testenv.Update(ctx, k8s, app, func() { app.Spec.CurrentDropletRef.Name = droplet })
		return app, droplet
	}
	// ready reports an instance's pod running and passing its health check, as the kubelet does.
	ready := func(ctx SpecContext, pod *corev1.Pod) {
		GinkgoHelper()
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod) }).Should(Succeed())
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, Image: pod.Spec.Containers[0].Image,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
		Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	}

	It("makes every app's web process with Cloud Foundry's defaults, and says why it runs no instance", func(ctx SpecContext) {
		app := cftest.CreateApp(ctx, k8s, space, "stopped", cfv1alpha1.StoppedState)
		web := cftest.WebProcess(ctx, k8s, app.Namespace, app.Name)
		Expect(web.Spec).To(Equal(cfv1alpha1.CFProcessSpec{AppRef: corev1.LocalObjectReference{Name: app.Name}, ProcessType: cfv1alpha1.WebProcessType,
			Instances: 1, MemoryMB: 1024, DiskMB: 1024, HealthCheck: cfv1alpha1.HealthCheck{Type: cfv1alpha1.PortHealthCheck, TimeoutSeconds: 60}}))
		Expect(metav1.GetControllerOf(web)).To(And(Not(BeNil()), HaveField("UID", app.UID)))
		Eventually(running(ctx, web)).Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cfv1alpha1.AppStoppedReason)))
		Expect(web.Status.DesiredInstances).To(BeZero())

		testenv.Update(ctx, k8s, app, func() { app.Spec.DesiredState = cfv1alpha1.StartedState })
		Eventually(running(ctx, web)).Should(And(HaveField("Reason", cfv1alpha1.NoDropletToRunReason), HaveField("Message", ContainSubstring("no staged droplet"))))
		_, err := statefulSet(ctx, web)()
		Expect(client.IgnoreNotFound(err)).To(Succeed())
		Expect(err).To(HaveOccurred(), "no StatefulSet without a droplet")

		By("an app whose web process is deleted gets it back")
		Expect(k8s.Delete(ctx, web)).To(Succeed())
		Eventually(func() types.UID { return cftest.WebProcess(ctx, k8s, app.Namespace, app.Name).UID }).ShouldNot(Equal(web.UID))
	})

	It("runs the current droplet's process type in a StatefulSet of the process's instances, and reports them as their pods say", func(ctx SpecContext) {
		app, droplet := startedWithDroplet(ctx, "web")
		web := cftest.WebProcess(ctx, k8s, app.Namespace, app.Name)
		Eventually(statefulSet(ctx, web)).Should(And(
			HaveField("Spec.Replicas", HaveValue(BeEquivalentTo(1))),
			HaveField("Spec.Template.Annotations", HaveKeyWithValue("workloads.cloudfoundry.org/droplet", droplet)),
			HaveField("Spec.Template.Spec.Containers", ConsistOf(And(
				HaveField("Image", cftest.DropletImage(app.Name)), HaveField("Command", []string{"/cnb/process/web"}))))))
		Eventually(running(ctx, web)).Should(HaveField("Reason", cfv1alpha1.StartingReason))
		Expect(web.Status.Droplet).To(Equal(droplet))
		Expect(web.Status.DesiredInstances).To(BeEquivalentTo(1))

		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: web.Name + "-0"}}
		ready(ctx, pod)
		Eventually(running(ctx, web)).Should(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", cfv1alpha1.InstancesRunningReason)))
		Expect(web.Status.RunningInstances).To(BeEquivalentTo(1))
		Expect(web.Status.Instances).To(ConsistOf(And(HaveField("Index", BeEquivalentTo(0)), HaveField("State", cfv1alpha1.InstanceRunning),
			HaveField("Droplet", droplet), HaveField("Image", cftest.DropletImage(app.Name)))))
		Expect(web.Status.Selector).To(Equal(cfv1alpha1.ProcessLabel + "=" + web.Name))

		By("a rolling restart reaches the instances' template, which replaces them")
		testenv.Update(ctx, k8s, web, func() {
			metav1.SetMetaDataAnnotation(&web.ObjectMeta, cfv1alpha1.RestartedAtAnnotation, "2026-12-08T01:00:00Z")
		})
		Eventually(statefulSet(ctx, web)).Should(HaveField("Spec.Template.Annotations", HaveKeyWithValue(cfv1alpha1.RestartedAtAnnotation, "2026-12-08T01:00:00Z")))

		By("a stopped app runs no instance")
		testenv.Update(ctx, k8s, app, func() { app.Spec.DesiredState = cfv1alpha1.StoppedState })
		Eventually(statefulSet(ctx, web)).Should(HaveField("Spec.Replicas", HaveValue(BeZero())))
		Eventually(running(ctx, web)).Should(HaveField("Reason", cfv1alpha1.AppStoppedReason))
		Expect(web.Status.DesiredInstances).To(BeZero())
	})

	It("says which ResourceQuota of the space keeps an instance from being made, and reports it DOWN", func(ctx SpecContext) {
		app, _ := startedWithDroplet(ctx, "quota")
		web := cftest.WebProcess(ctx, k8s, app.Namespace, app.Name)
		ready(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: web.Name + "-0"}})
		Eventually(running(ctx, web)).Should(HaveField("Reason", cfv1alpha1.InstancesRunningReason))

		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "pods"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}
		Expect(k8s.Create(ctx, quota)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, quota)).To(Succeed()) })
		Eventually(func() corev1.ResourceList {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
			return quota.Status.Used
		}).Should(HaveKey(corev1.ResourcePods), "kube-controller-manager counts the space's pods")

		testenv.Update(ctx, k8s, web, func() { web.Spec.Instances = 2 })
		Eventually(running(ctx, web)).Should(And(HaveField("Reason", cfv1alpha1.QuotaExceededReason),
			HaveField("Message", ContainSubstring("ResourceQuota pods allows pods 1"))))
		Expect(web.Status.Instances).To(ContainElement(And(HaveField("Index", BeEquivalentTo(1)),
			HaveField("State", cfv1alpha1.InstanceDown), HaveField("Reason", cfv1alpha1.QuotaExceededReason))))
	})
})
