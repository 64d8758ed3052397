package cfapi_test

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
)

// runInstances plays the kubelet, which this suite has none of: every instance pod of the
// process that the StatefulSet made runs and passes its health check. The StatefulSet replaces
// an instance only once the one replaced before it is ready, so without it a restart stops at
// the first instance.
func runInstances(ctx context.Context, g Gomega, p *cfv1alpha1.CFProcess) {
	pods := &corev1.PodList{}
	g.Expect(k8s.List(ctx, pods, client.InNamespace(p.Namespace), client.MatchingLabels{cfv1alpha1.ProcessLabel: p.Name})).To(Succeed())
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodRunning {
			continue
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		}}
		g.Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	}
}

// instancesOf are a process's instances, by index, as the cf CLI's start poll reads them
// (cli:actor/v7action/application.go PollProcesses).
func instancesOf(ctx context.Context, u user, p *cfv1alpha1.CFProcess) []instance {
	GinkgoHelper()
	return decode[listOf[instance]](u.get(ctx, "/v3/processes/"+p.Name+"/stats"), http.StatusOK).Resources
}

var (
	// instanceStarting is an instance that starts, as Cloud Controller presents one: without
	// details, which the cf CLI would print as "Error starting instances" while it waits.
	instanceStarting = And(HaveField("State", "STARTING"), HaveField("Details", BeNil()))
	instanceRunning  = HaveField("State", "RUNNING")
	instanceDown     = HaveField("State", "DOWN")
)

// setDroplet makes droplet the app's current droplet, as cf push does once it has staged it.
func setDroplet(ctx context.Context, u user, appGUID, droplet string) {
	GinkgoHelper()
	Expect(u.patch(ctx, "/v3/apps/"+appGUID+"/relationships/current_droplet", map[string]any{"data": map[string]any{"guid": droplet}}).status).To(Equal(http.StatusOK))
}

// runningApp pushes an app of two instances, stages it and starts it through the CF API, and
// runs its instances until the CF API reports both RUNNING. It returns the app's GUID and its
// web process.
func runningApp(ctx context.Context, u user, space, name string) (string, *cfv1alpha1.CFProcess) {
	GinkgoHelper()
	guid := pushed(ctx, u, space, "applications:\n- name: "+name+"\n  instances: 2\n")
	setDroplet(ctx, u, guid, cftest.StagedDroplet(ctx, k8s, space, guid))
	Expect(u.post(ctx, "/v3/apps/"+guid+"/actions/start", nil).status).To(Equal(http.StatusOK))
	web := cftest.WebProcess(ctx, k8s, space, guid)
	expectRunning(ctx, u, web)
	return guid, web
}

// expectRunning runs the process's instances until the CF API reports every one RUNNING.
func expectRunning(ctx context.Context, u user, p *cfv1alpha1.CFProcess) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		runInstances(ctx, g, p)
		g.Expect(instancesOf(ctx, u, p)).To(HaveEach(instanceRunning))
	}).Should(Succeed())
}

var _ = Describe("an app's instances right after a start through the CF API", func() {
	// Right after a start, cf-hnc's status still lists the instances made before it, as it did
	// to the cf CLI, which then ended its wait for a new instance on an old one. The StatefulSet
	// replaces the instances one at a time, each once its predecessor is ready, so instance 0,
	// the last one replaced, still runs and is reported: the specs read the stats at that point,
	// where the lag cannot hide the old instance. (Instance 1 may be reported, replaced, or
	// between the two.)
	It("reports the instances made before a restart as STARTING, until those made for it run", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "restart-watcher", "apps")
		guid, web := runningApp(ctx, developer, space, "restarted")

		By("POST /v3/apps/:guid/actions/restart, as cf push restarts an app")
		Expect(developer.post(ctx, "/v3/apps/"+guid+"/actions/restart", nil).status).To(Equal(http.StatusOK))
		Expect(instancesOf(ctx, developer, web)).To(HaveExactElements(instanceStarting, Or(instanceStarting, instanceDown)))
		expectRunning(ctx, developer, web)

		// The spec does not wait for these instances to run: in this suite, whose pods have no
		// node and are deleted at once, the StatefulSet controller then recreates and deletes
		// them without end (its status update fails with currentReplicas below zero).
		By("stop, then start, as cf restart and cf scale -m do")
		Expect(developer.post(ctx, "/v3/apps/"+guid+"/actions/stop", nil).status).To(Equal(http.StatusOK))
		Expect(developer.post(ctx, "/v3/apps/"+guid+"/actions/start", nil).status).To(Equal(http.StatusOK))
		Expect(instancesOf(ctx, developer, web)).To(HaveEach(Or(instanceStarting, instanceDown)))
	})

	It("reports the instances of the app's droplet before as STARTING once it has a new current droplet", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "repush-watcher", "apps")
		guid, web := runningApp(ctx, developer, space, "repushed")

		// cf push sets the new droplet between a stop and a restart; this spec leaves the stop
		// out so that the instances of the droplet before still run when it reads the stats,
		// as they did for the cf CLI when cf-hnc's status lagged behind the stop.
		setDroplet(ctx, developer, guid, cftest.StagedDroplet(ctx, k8s, space, guid))
		Expect(instancesOf(ctx, developer, web)).To(HaveExactElements(instanceStarting, Or(instanceStarting, instanceDown)))
		expectRunning(ctx, developer, web)
	})

	It("keeps reporting the instances that a rolling restart (kubectl cf restart) has not replaced yet as RUNNING", func(ctx SpecContext) {
		_, space, developer := developedSpace(ctx, "rolling-watcher", "apps")
		_, web := runningApp(ctx, developer, space, "rolled")

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		patch := client.MergeFrom(web.DeepCopy())
		metav1.SetMetaDataAnnotation(&web.ObjectMeta, cfv1alpha1.RestartedAtAnnotation, time.Now().UTC().Format(time.RFC3339Nano))
		Expect(k8s.Patch(ctx, web, patch)).To(Succeed())
		Expect(instancesOf(ctx, developer, web)).To(HaveExactElements(instanceRunning, Or(instanceRunning, instanceStarting, instanceDown)))
		expectRunning(ctx, developer, web)
	})
})
