package cftest

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// FinishBuild writes the end of a build as cf-hnc's build reconciler does when kpack's build
// ends: the Succeeded condition and, on success, the droplet. The reconciler leaves a finished
// build alone, but one of its reconciles that read the build before may still write over it:
// the end is written until it stays.
func FinishBuild(ctx context.Context, c client.Client, namespace, name string, succeeded metav1.Condition, droplet *cfv1alpha1.BuildDropletStatus) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		build := &cfv1alpha1.CFBuild{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, build)).To(Succeed())
		if done := meta.FindStatusCondition(build.Status.Conditions, cfv1alpha1.SucceededCondition); done == nil || done.Status != succeeded.Status {
			succeeded.ObservedGeneration = build.Generation
			meta.SetStatusCondition(&build.Status.Conditions, succeeded)
			build.Status.Droplet = droplet
			g.Expect(c.Status().Update(ctx, build)).To(Succeed())
		}
		g.Consistently(func(g Gomega) metav1.ConditionStatus {
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, build)).To(Succeed())
			return meta.FindStatusCondition(build.Status.Conditions, cfv1alpha1.SucceededCondition).Status
		}).WithTimeout(time.Second).Should(Equal(succeeded.Status))
	}).Should(Succeed())
}

// DropletImage is the image of the droplets that StagedDroplet makes of an app.
func DropletImage(appGUID string) string {
	return "registry.example/droplets/" + appGUID + "@sha256:" + strings.Repeat("d", 64)
}

// StagedDroplet makes a CFBuild of an app that succeeded, with its status as cf-hnc writes it
// (no kpack runs in the suites that use it), and returns its GUID, which is its droplet's.
func StagedDroplet(ctx context.Context, c client.Client, space, appGUID string) string {
	GinkgoHelper()
	return StagedDropletOn(ctx, c, space, appGUID, Jammy, "")
}

// StagedDropletOn is StagedDroplet of a droplet that kpack built with the stack id and the run
// image given.
func StagedDropletOn(ctx context.Context, c client.Client, space, appGUID, stackID, runImage string) string {
	GinkgoHelper()
	build := &cfv1alpha1.CFBuild{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFBuildSpec{
			AppRef:     corev1.LocalObjectReference{Name: appGUID},
			PackageRef: corev1.LocalObjectReference{Name: string(uuid.NewUUID())},
			Lifecycle:  cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle},
		},
	}
	Expect(c.Create(ctx, build)).To(Succeed())
	FinishBuild(ctx, c, space, build.Name, metav1.Condition{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionTrue,
		Reason: cfv1alpha1.BuildSucceededReason}, &cfv1alpha1.BuildDropletStatus{
		Registry:     cfv1alpha1.Registry{Image: DropletImage(appGUID)},
		Stack:        stackID,
		RunImage:     runImage,
		ProcessTypes: []cfv1alpha1.ProcessType{{Type: cfv1alpha1.WebProcessType, Command: "./app"}},
	})
	return build.Name
}

// WebProcess waits until an app of a space has its web process, which cf-hnc makes, and
// returns it.
func WebProcess(ctx context.Context, c client.Client, space, appGUID string) *cfv1alpha1.CFProcess {
	GinkgoHelper()
	p := &cfv1alpha1.CFProcess{}
	Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: space, Name: cfv1alpha1.ProcessName(appGUID, cfv1alpha1.WebProcessType)}, p)
	}).Should(Succeed())
	return p
}
