package e2e_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// The node's network (ADR 4): pods, the platform's and the builds' as much as the apps', are on
// the node's own pod network, and reach of the host only what it forwards to them.
var _ = Describe("The node's network", Label(localLabel), func() {
	It("lets a pod reach the apiserver through the kubernetes Service and the registry at its name, and no other server of the host", func(ctx SpecContext) {
		kubernetes := &corev1.Service{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, kubernetes)).To(Succeed())
		host, registryPort, err := net.SplitHostPort(cp.Kpack().Registry.Host())
		Expect(err).NotTo(HaveOccurred())
		apiserver, err := url.Parse(cp.Config.Host)
		Expect(err).NotTo(HaveOccurred())
		nodes := &corev1.NodeList{}
		Expect(k8s.List(ctx, nodes)).To(Succeed())
		Expect(nodes.Items).To(HaveLen(1))
		kubeletPort := strconv.Itoa(int(nodes.Items[0].Status.DaemonEndpoints.KubeletEndpoint.Port))

		output := runInPod(ctx, createNamespace(ctx), `
probe() { if echo | nc -w 3 "$1" "$2" >/dev/null 2>&1; then echo "$1:$2 open"; else echo "$1:$2 closed"; fi; }
probe `+kubernetes.Spec.ClusterIP+` 443
probe `+host+` `+apiserver.Port()+`
probe `+host+` `+registryPort+`
probe `+host+` `+kubeletPort+`
cat /proc/net/route`)
		Expect(output).To(ContainSubstring(kubernetes.Spec.ClusterIP+":443 open"), "the apiserver, through the kubernetes Service")
		Expect(output).To(ContainSubstring(host+":"+apiserver.Port()+" open"), "the apiserver, at its advertised endpoint")
		Expect(output).To(ContainSubstring(host+":"+registryPort+" open"), "the registry, at the name images carry")
		Expect(output).To(ContainSubstring(host+":"+kubeletPort+" closed"),
			"the kubelet listens on the host's loopback too, and is not forwarded: the same kind of request fails")
		Expect(defaultRoutes(output)).To(BeZero(), "no default route: a pod reaches only its subnet and the Service range\n%s", output)
	})
})

// runInPod runs a shell script in a pod of the stack's run image (busybox) in namespace, on the
// pod network, with the restricted Pod Security Standard and bounded resources (as a space's
// quota asks), and returns what it printed.
func runInPod(ctx SpecContext, namespace, script string) string {
	GinkgoHelper()
	bounded := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	pod := cftest.Restricted(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "probe-" + string(uuid.NewUUID())[:8]},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{
				Name: "probe", Image: cp.Kpack().Images.Stack.RunImage.Pinned(), Command: []string{"/bin/sh", "-c", script},
				Resources: corev1.ResourceRequirements{Requests: bounded, Limits: bounded},
			}},
		},
	})
	// The namespace's default ServiceAccount, which admission needs, comes a moment after it.
	Eventually(func() error { return k8s.Create(ctx, pod) }).Should(Succeed())
	Eventually(func() corev1.PodPhase {
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		return pod.Status.Phase
	}, time.Minute).Should(Equal(corev1.PodSucceeded), "pod %s: %+v", pod.Name, pod.Status)
	return instanceLog(ctx, pod)
}

// defaultRoutes counts the default routes (destination 0.0.0.0) of a /proc/net/route listing.
func defaultRoutes(listing string) int {
	n := 0
	for line := range strings.Lines(listing) {
		if fields := strings.Fields(line); len(fields) > 2 && fields[1] == "00000000" {
			n++
		}
	}
	return n
}

// An operator's life with cf-hnc on a running foundation, as docs/install.md tells it: an
// upgrade (`make deploy` of a newer image), an image that cannot be pulled, an uninstall that
// keeps the data and an install again. The installation is the suite's own: each spec leaves it
// as it found it.
var _ = Describe("Upgrading and uninstalling cf-hnc over a running foundation", Label(localLabel), Ordered, func() {
	var (
		org, space string
		app        *cfv1alpha1.CFApp
		instances  map[types.UID]int32
		original   string
	)

	BeforeAll(func(ctx SpecContext) {
		original = cp.DeployedImage()
		org = createOrg(ctx, "operated-"+string(uuid.NewUUID())[:8])
		space = createSpace(ctx, org, "prod")
		placeOrgRegistry(ctx, org)
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
		app = startedAppOf(ctx, org, space, staticSource, 2)
		instances = restartsOf(instancePods(ctx, webProcess(ctx, app)))
		Expect(instances).To(HaveLen(2))
		DeferCleanup(func(ctx SpecContext) {
			if cp.DeployedImage() != original {
				Expect(cp.DeployImage(ctx, original)).To(Succeed())
			}
		})
	})

	It("replaces the manager's pods one at a time with a newer image: no space loses BuildReady, no write is lost, no app instance restarts", func(ctx SpecContext) {
		newer, err := cp.BuildCFHNCImage(ctx, time.Now().Unix())
		Expect(err).NotTo(HaveOccurred())
		Expect(newer).NotTo(Equal(original), "another release of the same tree: another image")
		before := managerPods(ctx)
		ready := buildReady(ctx, org, space)()
		Expect(ready.Status).To(Equal(metav1.ConditionTrue))

		watch, stopWatching := context.WithCancel(ctx)
		var fewestReady int
		var lostBuildReady []string
		var watching sync.WaitGroup
		watching.Go(func() {
			fewestReady = len(before)
			for watch.Err() == nil {
				if n := readyManagerPods(watch); n < fewestReady {
					fewestReady = n
				}
				s := &cfv1alpha1.CFSpace{}
				if k8s.Get(watch, client.ObjectKey{Namespace: org, Name: space}, s) == nil {
					if c := meta.FindStatusCondition(s.Status.Conditions, cfv1alpha1.BuildReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
						lostBuildReady = append(lostBuildReady, fmt.Sprintf("%+v", c))
					}
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
		By("creating spaces while the pods are replaced")
		var written []string
		created := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			for i := range 6 {
				name := fmt.Sprintf("during-upgrade-%d", i)
				if err := k8s.Create(ctx, newSpaceObject(org, name)); err != nil {
					created <- fmt.Errorf("space %s: %w", name, err)
					return
				}
				written = append(written, name)
				time.Sleep(2 * time.Second)
			}
			created <- nil
		}()
		Expect(cp.DeployImage(ctx, newer)).To(Succeed())
		Eventually(created, time.Minute).Should(Receive(BeNil()), "the webhooks answered every write during the upgrade")
		stopWatching()
		watching.Wait()

		Expect(fewestReady).To(BeNumerically(">=", 1), "a manager pod was ready at every moment")
		Expect(lostBuildReady).To(BeEmpty())
		after := runningManagerPods(ctx)
		Expect(after).To(HaveLen(len(before)))
		for _, pod := range after {
			Expect(before).NotTo(HaveKey(pod.UID), "pod %s is a new one", pod.Name)
			Expect(pod.Spec.Containers[0].Image).To(Equal(newer))
		}
		Expect(buildReady(ctx, org, space)().LastTransitionTime).To(Equal(ready.LastTransitionTime), "BuildReady never changed")
		Eventually(func(g Gomega) {
			list := &cfv1alpha1.CFSpaceList{}
			g.Expect(k8s.List(ctx, list, client.InNamespace(org))).To(Succeed())
			names := map[string]bool{}
			for _, s := range list.Items {
				g.Expect(meta.IsStatusConditionTrue(s.Status.Conditions, cfv1alpha1.BuildReadyCondition)).To(BeTrue(), "space %s", s.Spec.DisplayName)
				names[s.Spec.DisplayName] = true
			}
			for _, name := range written {
				g.Expect(names).To(HaveKey(name))
			}
		}, 2*time.Minute, time.Second).Should(Succeed(), "every space written during the upgrade is made and can build")
		Expect(restartsOf(instancePods(ctx, webProcess(ctx, app)))).To(Equal(instances),
			"the release does not change the instances' template: the same pods, never restarted")
	})

	It("keeps the running pods serving when the new image cannot be pulled, says why, and rolls back", func(ctx SpecContext) {
		serving := cp.DeployedImage()
		before := managerPods(ctx)
		missing := strings.SplitN(serving, "@", 2)[0] + "@sha256:" + strings.Repeat("0", 64)
		Expect(cp.ApplyCFHNC(ctx, missing)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			if cp.Healthy() != nil {
				Expect(cp.DeployImage(ctx, serving)).To(Succeed())
			}
		})

		var stuck corev1.Pod
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx, pods, client.InNamespace(install.Namespace), client.MatchingLabels{"app.kubernetes.io/component": "manager"})).To(Succeed())
			found := false
			for _, pod := range pods.Items {
				for _, s := range pod.Status.ContainerStatuses {
					if s.Image == missing && s.State.Waiting != nil && (s.State.Waiting.Reason == "ErrImagePull" || s.State.Waiting.Reason == "ImagePullBackOff") {
						stuck, found = pod, true
					}
				}
			}
			g.Expect(found).To(BeTrue(), "a new pod waits for its image")
		}, time.Minute).Should(Succeed())
		Eventually(func() []eventsv1.Event { return events(ctx, &stuck)() }, time.Minute).Should(ContainElement(And(
			HaveField("Reason", "Failed"), HaveField("Note", ContainSubstring(missing)))), "an event names the image that cannot be pulled")
		Expect(restartsOf(managerPodList(ctx, before))).To(Equal(before), "the old pods keep running")
		Expect(readyManagerPods(ctx)).To(BeNumerically(">=", len(before)))
		Expect(cp.Healthy()).To(MatchError(And(ContainSubstring("cf-hnc-manager"), ContainSubstring(stuck.Name),
			MatchRegexp("ErrImagePull|ImagePullBackOff"))), "the harness names the component and why")
		createOrg(ctx, "while-stuck-"+string(uuid.NewUUID())[:8]) // the webhooks and the leader still work

		By("rolling back to the image that serves")
		Expect(cp.DeployImage(ctx, serving)).To(Succeed())
		Expect(cp.Healthy()).To(Succeed())
	})

	It("uninstalls the manager keeping every org, space and running app, and takes them up again when installed again", func(ctx SpecContext) {
		image := cp.DeployedImage()
		objs, err := install.Build(projectConfig(), install.Default, image)
		Expect(err).NotTo(HaveOccurred())
		Expect(install.Uninstall(ctx, k8s, objs, install.UninstallOptions{Timeout: 2 * time.Minute})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: install.Namespace, Name: install.ManagerDeployment}, &appsv1.Deployment{}); err != nil {
				Expect(cp.DeployImage(ctx, image)).To(Succeed())
			}
		})

		for _, obj := range []client.Object{
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: install.Namespace, Name: install.ManagerDeployment}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: install.Namespace, Name: install.APIDeployment}},
			&admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: install.ValidatingWebhookConfiguration}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: install.Namespace}},
		} {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(BeNotFound(), "%T %s is removed", obj, obj.GetName())
		}
		Expect(buildReady(ctx, org, space)()).To(HaveField("Status", metav1.ConditionTrue), "the space and its status stay")
		By("no webhook of the manager that is gone fails CF writes closed")
		written := newSpaceObject(org, "while-uninstalled")
		Expect(k8s.Create(ctx, written)).To(Succeed())
		Consistently(func() []types.UID { return keys(restartsOf(instancePods(ctx, webProcess(ctx, app)))) }, "3s").
			Should(ConsistOf(keys(instances)), "the app's instances keep running")

		Expect(cp.DeployImage(ctx, image)).To(Succeed())
		Eventually(buildReady(ctx, org, written.Name), 2*time.Minute).Should(HaveField("Status", metav1.ConditionTrue),
			"the space written while no manager ran is taken up")
		createSpace(ctx, org, "after-reinstall")
		Expect(restartsOf(instancePods(ctx, webProcess(ctx, app)))).To(Equal(instances), "and never restarted")
	})
})

// managerPods are the manager's pods by UID, with their containers' restarts.
func managerPods(ctx context.Context) map[types.UID]int32 {
	GinkgoHelper()
	return restartsOf(runningManagerPods(ctx))
}

// runningManagerPods are the manager's pods that are not being deleted.
func runningManagerPods(ctx context.Context) []corev1.Pod {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(k8s.List(ctx, pods, client.InNamespace(install.Namespace), client.MatchingLabels{"app.kubernetes.io/component": "manager"})).To(Succeed())
	var running []corev1.Pod
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil {
			running = append(running, pod)
		}
	}
	return running
}

// managerPodList are the pods of uids, as they are now.
func managerPodList(ctx context.Context, uids map[types.UID]int32) []corev1.Pod {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(k8s.List(ctx, pods, client.InNamespace(install.Namespace))).To(Succeed())
	var found []corev1.Pod
	for _, pod := range pods.Items {
		if _, ok := uids[pod.UID]; ok {
			found = append(found, pod)
		}
	}
	return found
}

// readyManagerPods counts the manager's pods that are ready.
func readyManagerPods(ctx context.Context) int {
	pods := &corev1.PodList{}
	if err := k8s.List(ctx, pods, client.InNamespace(install.Namespace), client.MatchingLabels{"app.kubernetes.io/component": "manager"}); err != nil {
		return 0
	}
	n := 0
	for _, pod := range pods.Items {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && pod.DeletionTimestamp == nil {
				n++
			}
		}
	}
	return n
}

// restartsOf maps each pod's UID to its containers' restarts.
func restartsOf(pods []corev1.Pod) map[types.UID]int32 {
	restarts := map[types.UID]int32{}
	for _, pod := range pods {
		restarts[pod.UID] = 0
		for _, s := range pod.Status.ContainerStatuses {
			restarts[pod.UID] += s.RestartCount
		}
	}
	return restarts
}

func keys[K comparable, V any](m map[K]V) []K {
	var ks []K
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
