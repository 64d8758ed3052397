package presenter_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

func TestPresenter(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CF API presenters")
}

const (
	droplet = "droplet-guid"
	// started is when the CF API last started the app.
	started = "2026-12-05T11:00:00.123456789Z"
)

// stats presents the instances of a process that runs droplet, as the CF API does.
func stats(p *cfv1alpha1.CFProcess, droplet string) []presenter.InstanceStats {
	return presenter.ForStats(p, cf.Instances(p, droplet))
}

// startedProcess is a process of one instance whose app the CF API started at started, and whose
// status reports instance.
func startedProcess(instance cfv1alpha1.InstanceStatus) *cfv1alpha1.CFProcess {
	return &cfv1alpha1.CFProcess{
		ObjectMeta: metav1.ObjectMeta{Name: "app-guid-web", Annotations: map[string]string{cfv1alpha1.AppStartedAtAnnotation: started}},
		Spec:       cfv1alpha1.CFProcessSpec{ProcessType: "web", Instances: 1, MemoryMB: 256, DiskMB: 512},
		Status:     cfv1alpha1.CFProcessStatus{Droplet: droplet, Instances: []cfv1alpha1.InstanceStatus{instance}},
	}
}

// madeFor is an instance in state, for reason, whose pod was made for the droplet and the start.
func madeFor(droplet, start string, state cfv1alpha1.InstanceState, reason string) cfv1alpha1.InstanceStatus {
	return cfv1alpha1.InstanceStatus{State: state, Reason: reason, Droplet: droplet, AppStartedAt: start}
}

var _ = Describe("The stats of a process's instances", func() {
	const before = "2026-12-05T10:00:00Z"

	DescribeTable("present an instance as cf-hnc reports it only when it was made for the app's droplet and its latest start",
		func(instance cfv1alpha1.InstanceStatus, state string, details *string) {
			stats := stats(startedProcess(instance), droplet)
			Expect(stats).To(HaveExactElements(And(HaveField("State", state), HaveField("Details", Equal(details)))))
		},
		Entry("running, of the start", madeFor(droplet, started, cfv1alpha1.InstanceRunning, ""), "RUNNING", nil),
		Entry("crashed, of the start: the cf CLI's wait fails once all are",
			madeFor(droplet, started, cfv1alpha1.InstanceCrashed, cfv1alpha1.CrashLoopReason), "CRASHED", ptr.To(cfv1alpha1.CrashLoopReason)),
		Entry("starting, with no details: the cf CLI prints details as an error while it waits",
			madeFor(droplet, started, cfv1alpha1.InstanceStarting, cfv1alpha1.StartingReason), "STARTING", nil),
		Entry("down, of the start, with why", madeFor(droplet, started, cfv1alpha1.InstanceDown, cfv1alpha1.QuotaExceededReason), "DOWN", ptr.To(cfv1alpha1.QuotaExceededReason)),
		Entry("running, made before the start: being replaced", madeFor(droplet, before, cfv1alpha1.InstanceRunning, ""), "STARTING", nil),
		Entry("crashed, made before the start: being replaced", madeFor(droplet, before, cfv1alpha1.InstanceCrashed, cfv1alpha1.CrashLoopReason), "STARTING", nil),
		Entry("running the droplet before the current one: being replaced", madeFor("old-droplet-guid", started, cfv1alpha1.InstanceRunning, ""), "STARTING", nil),
	)

	It("present an instance as cf-hnc reports it while the CF API has never started the app", func() {
		p := startedProcess(madeFor(droplet, "", cfv1alpha1.InstanceRunning, ""))
		p.Annotations = nil
		Expect(stats(p, droplet)).To(HaveExactElements(HaveField("State", "RUNNING")))
	})

	It("list every instance DOWN while the process runs no droplet, whatever cf-hnc still reports", func() {
		Expect(stats(startedProcess(madeFor(droplet, started, cfv1alpha1.InstanceRunning, "")), "")).
			To(HaveExactElements(And(HaveField("State", "DOWN"), HaveField("Routable", BeNil()), HaveField("Placement", BeNil()))))
	})
})
