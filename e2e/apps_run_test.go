package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// starting is how long an instance may take from a start, scale or new droplet to answering:
// placing it, pulling the droplet from the local registry and passing its health check.
const starting = 2 * time.Minute

// The specs of running apps run droplets that kpack built on the real node, as instances that
// the test reaches on the pod network of this machine.
var _ = Describe("Running apps", Ordered, ContinueOnFailure, Label("local"), func() {
	var org, space string

	BeforeAll(func(ctx SpecContext) {
		org = createOrg(ctx, "apps-"+string(uuid.NewUUID())[:8])
		space = createSpace(ctx, org, "prod")
		placeOrgRegistry(ctx, org)
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
	}, NodeTimeout(3*time.Minute))

	It("runs a started app's droplet as the CNB user, answering on its port", func(ctx SpecContext) {
		app := startedAppOf(ctx, org, space, staticSource, 1)
		web := webProcess(ctx, app)
		droplet := getBuild(ctx, space, app.Spec.CurrentDropletRef.Name).Status.Droplet.Registry.Image
		Expect(web.Status.Instances).To(ConsistOf(MatchFields(IgnoreExtras, Fields{
			"Index": BeEquivalentTo(0), "State": Equal(cfv1alpha1.InstanceRunning), "Image": Equal(droplet),
		})))
		pod := instancePod(ctx, web, 0)
		Expect(get(ctx, pod)).To(ContainSubstring("<h1>static</h1>"))

		By("running with no API token, no privilege, and the process's limits")
		Expect(pod.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
		for _, volume := range pod.Spec.Volumes {
			Expect(volume.Projected).To(BeNil(), "no service account token is mounted")
		}
		Expect(pod.Spec.Containers[0].Resources.Limits.Memory().String()).To(Equal("64Mi"))
		Expect(pod.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		Expect(pod.Spec.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
		Expect(instanceLog(ctx, pod)).To(ContainSubstring("GET /"), "the instance logs the request")
	})

	It("stops, starts and scales an app", func(ctx SpecContext) {
		app := startedAppOf(ctx, org, space, staticSource, 1)
		web := webProcess(ctx, app)

		By("stopping it: no instance runs")
		update(ctx, app, func() { app.Spec.DesiredState = cfv1alpha1.StoppedState })
		Eventually(running(ctx, web), starting).Should(HaveField("Reason", cfv1alpha1.AppStoppedReason))
		Eventually(func() []corev1.Pod { return instancePods(ctx, web) }, starting).Should(BeEmpty())

		By("starting it again")
		update(ctx, app, func() { app.Spec.DesiredState = cfv1alpha1.StartedState })
		Eventually(running(ctx, web), starting).Should(HaveField("Status", metav1.ConditionTrue))

		By("scaling it to two instances, both answering")
		update(ctx, web, func() { web.Spec.Instances = 2 })
		Eventually(running(ctx, web), starting).Should(And(HaveField("Status", metav1.ConditionTrue), HaveField("Message", HavePrefix("2 of 2"))))
		Expect(web.Status.RunningInstances).To(BeEquivalentTo(2))
		for _, pod := range instancePods(ctx, web) {
			Expect(get(ctx, &pod)).To(ContainSubstring("<h1>static</h1>"))
		}
	})

	It("restarts a crashed instance, counts the restarts and says why", func(ctx SpecContext) {
		app := createApp(ctx, space, defaultLifecycle)
		DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, app)).To(Succeed()) })
		build := stageSource(ctx, org, app, staticSource)
		Eventually(succeeded(ctx, build)).Should(HaveField("Status", metav1.ConditionTrue))
		web := webProcess(ctx, app)
		update(ctx, web, func() { web.Spec.MemoryMB, web.Spec.Command = 64, "echo crashing; exit 3" })
		update(ctx, app, func() {
			app.Spec.CurrentDropletRef.Name = build.Name
			app.Spec.DesiredState = cfv1alpha1.StartedState
		})
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
			g.Expect(web.Status.Instances).To(ConsistOf(MatchFields(IgnoreExtras, Fields{
				"State": Equal(cfv1alpha1.InstanceCrashed), "Reason": Equal(cfv1alpha1.CrashLoopReason), "Restarts": BeNumerically(">=", 1),
			})))
		}, starting).Should(Succeed())
		Expect(web.Status.CrashedInstances).To(BeEquivalentTo(1))
		Expect(running(ctx, web)()).To(And(HaveField("Reason", cfv1alpha1.CrashLoopReason), HaveField("Message", ContainSubstring("instance 0 CRASHED"))))
		Eventually(events(ctx, web)).Should(ContainElement(HaveField("Reason", cfv1alpha1.CrashLoopReason)))
		Expect(instanceLog(ctx, instancePod(ctx, web, 0))).To(ContainSubstring("crashing"))
	})

	It("rolls every instance to a stack fix, with an instance ready throughout", func(ctx SpecContext) {
		app := startedAppOf(ctx, org, space, staticSource, 2)
		web := webProcess(ctx, app)
		before := app.Spec.CurrentDropletRef.Name

		ref, err := cp.UpgradeRunImage(ctx)
		Expect(err).NotTo(HaveOccurred())
		leastReady := 2
		Eventually(func(g Gomega) {
			leastReady = min(leastReady, readyInstances(ctx, web))
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
			g.Expect(app.Spec.CurrentDropletRef.Name).NotTo(Equal(before), "the app runs the rebased droplet")
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
			g.Expect(web.Status.Droplet).To(Equal(app.Spec.CurrentDropletRef.Name))
			g.Expect(meta.IsStatusConditionTrue(web.Status.Conditions, cfv1alpha1.RunningCondition)).To(BeTrue())
		}, rollout+starting, 100*time.Millisecond).Should(Succeed())
		Expect(leastReady).To(BeNumerically(">=", 1), "one instance answered while the other was replaced")

		rebased := getBuild(ctx, space, app.Spec.CurrentDropletRef.Name).Status.Droplet
		Expect(rebased.RunImage).To(HaveSuffix("@" + ref.Digest))
		Expect(web.Status.Instances).To(HaveEach(HaveField("Image", rebased.Registry.Image)), "every instance runs the fixed run image")
		for _, pod := range instancePods(ctx, web) {
			Expect(get(ctx, &pod)).To(ContainSubstring("<h1>static</h1>"))
		}
	})

	It("removes an app's instances with the app", func(ctx SpecContext) {
		app := startedAppOf(ctx, org, space, staticSource, 1)
		web := webProcess(ctx, app)
		Expect(k8s.Delete(ctx, app, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKeyFromObject(web), &appsv1.StatefulSet{})
		}, starting).Should(BeNotFound())
		Eventually(func() []corev1.Pod { return instancePods(ctx, web) }, starting).Should(BeEmpty())
	})
})

// startedAppOf stages source, gives the app's web process instances of 64 MiB, starts the app
// and waits until every instance runs.
func startedAppOf(ctx SpecContext, org, space string, source map[string]string, instances int32) *cfv1alpha1.CFApp {
	GinkgoHelper()
	app := deployedAppOf(ctx, org, space, source)
	web := webProcess(ctx, app)
	update(ctx, web, func() { web.Spec.Instances, web.Spec.MemoryMB = instances, 64 })
	update(ctx, app, func() { app.Spec.DesiredState = cfv1alpha1.StartedState })
	Eventually(running(ctx, web), starting).Should(HaveField("Status", metav1.ConditionTrue))
	return app
}

// webProcess is the web process that cf-hnc makes for every app.
func webProcess(ctx SpecContext, app *cfv1alpha1.CFApp) *cfv1alpha1.CFProcess {
	GinkgoHelper()
	web := &cfv1alpha1.CFProcess{}
	key := client.ObjectKey{Namespace: app.Namespace, Name: cfv1alpha1.ProcessName(app.Name, cfv1alpha1.WebProcessType)}
	Eventually(func() error { return k8s.Get(ctx, key, web) }).Should(Succeed())
	return web
}

func running(ctx SpecContext, p *cfv1alpha1.CFProcess) func() *metav1.Condition {
	return func() *metav1.Condition {
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		return meta.FindStatusCondition(p.Status.Conditions, cfv1alpha1.RunningCondition)
	}
}

// instancePods are the pods of a process's instances, also those being deleted.
func instancePods(ctx SpecContext, p *cfv1alpha1.CFProcess) []corev1.Pod {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(k8s.List(ctx, pods, client.InNamespace(p.Namespace), client.MatchingLabels{cfv1alpha1.ProcessLabel: p.Name})).To(Succeed())
	return pods.Items
}

func instancePod(ctx SpecContext, p *cfv1alpha1.CFProcess, index int) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Name + "-" + strconv.Itoa(index)}, pod)).To(Succeed())
	return pod
}

// readyInstances counts the instances that pass their health check and are not being stopped.
func readyInstances(ctx SpecContext, p *cfv1alpha1.CFProcess) int {
	ready := 0
	for _, pod := range instancePods(ctx, p) {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && pod.DeletionTimestamp == nil {
				ready++
			}
		}
	}
	return ready
}

// get fetches / from an instance on the pod network of this machine.
func get(ctx context.Context, pod *corev1.Pod) (string, error) {
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, "8080") + "/"
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	response, err := (&http.Client{Timeout: 5 * time.Second}).Do(request)
	if err != nil {
		return "", err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if response.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, response.Status)
	}
	return string(body), err
}

// instanceLog is what an instance's container wrote, this run and the last.
func instanceLog(ctx SpecContext, pod *corev1.Pod) string {
	GinkgoHelper()
	clientset, err := kubernetes.NewForConfig(cp.Config)
	Expect(err).NotTo(HaveOccurred())
	var all string
	for _, previous := range []bool{false, true} {
		body, err := clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Previous: previous}).DoRaw(ctx)
		if err == nil {
			all += string(body)
		}
	}
	return all
}
