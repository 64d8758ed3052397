package processes

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// processInputs is what running a process depends on, as observed.
type processInputs struct {
	process *cfv1alpha1.CFProcess
	// app is the process's app; nil once it is gone or being deleted.
	app *cfv1alpha1.CFApp
	// run is where the instances run, and the droplet they run (nil if the app has none).
	run runContext
	// current is the process's StatefulSet as it is; nil if there is none.
	current *appsv1.StatefulSet
	pods    []corev1.Pod
	quotas  []corev1.ResourceQuota
}

// processPlan is what a reconcile of a process decides: how many instances run which droplet,
// why none runs, and which quota keeps instances from being made.
type processPlan struct {
	desired         int32
	why, whyMessage string
	// droplet names the CFBuild whose droplet the instances run, and image is its image; both
	// empty while the app has none.
	droplet, image string
	// statefulSet is the StatefulSet to apply; nil to stop the instances of the one there is.
	statefulSet *appsv1.StatefulSet
	overQuota   string
}

// planProcess decides how a process runs: as many instances as it asks for while its app is
// started with a staged droplet, else none, and why.
func planProcess(in processInputs) processPlan {
	p := in.process
	plan := processPlan{desired: p.Spec.Instances}
	switch {
	case in.app.Spec.DesiredState != cfv1alpha1.StartedState:
		plan.desired, plan.why, plan.whyMessage = 0, cfv1alpha1.AppStoppedReason, "the app is stopped"
	case in.run.droplet == nil:
		plan.desired, plan.why, plan.whyMessage = 0, cfv1alpha1.NoDropletToRunReason, "the app has no staged droplet to run: push or stage it, and set its current droplet"
	}
	if droplet := in.run.droplet; droplet != nil {
		plan.droplet, plan.image = droplet.Name, droplet.Status.Droplet.Registry.Image
		plan.statefulSet = desiredStatefulSet(p, in.run, plan.desired)
	}
	plan.overQuota = overQuota(p, in.pods, in.quotas, plan.desired)
	return plan
}

// overQuota says which ResourceQuota of the space keeps the StatefulSet from making the
// instances that have no pod yet; "" when none is missing or the quotas have room. Only the
// StatefulSet's events would say it otherwise, which app developers do not read.
func overQuota(p *cfv1alpha1.CFProcess, pods []corev1.Pod, quotas []corev1.ResourceQuota, desired int32) string {
	live := 0
	for i := range pods {
		if pods[i].DeletionTimestamp == nil {
			live++
		}
	}
	if live >= int(desired) {
		return ""
	}
	return quotaShortfall(quotas, instanceNeeds(p))
}
