package staging

import (
	"fmt"
	"slices"
	"strings"
	"time"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/buildconfig"
	"code.cloudfoundry.org/cf-hnc/builders"
	"code.cloudfoundry.org/cf-hnc/internal/logtext"
)

// stagingInputs is what staging a CFBuild depends on, as observed.
type stagingInputs struct {
	build *cfv1alpha1.CFBuild
	// space is the CFSpace of the build's namespace; its status holds the build configuration.
	space *cfv1alpha1.CFSpace
	// following is the kpack Build that the CFBuild already follows, if any.
	following string
	// kpackBuild is that kpack Build, or else the one kpack started for the CFBuild; nil if
	// there is none.
	kpackBuild *kpackv1alpha2.Build
	// rebuilt are, for a rebuild, the CFBuilds whose droplet its kpack Build may rebuild: what
	// the kpack Build bears out (RebuildMismatch).
	rebuilt []cfv1alpha1.CFBuild
	// processes are the droplet's processes, read once the kpack Build succeeded.
	processes []cfv1alpha1.ProcessType
	// failedStep is the step of the kpack Build's pod that failed, read once it failed.
	failedStep *failedStep
	// unschedulable is why the scheduler cannot place the running kpack Build's pod.
	unschedulable string

	app *cfv1alpha1.CFApp
	pkg *cfv1alpha1.CFPackage
	// active is the CFBuild of the app that may stage now.
	active string
	// defaultBuilder is the default Builder of the space, where the operator placed it.
	defaultBuilder *kpackv1alpha2.Builder
	// dedicated is the dedicated Builder of the build's lifecycle as it is, if there is one.
	dedicated *kpackv1alpha2.Builder
	// owned are the dedicated Builders of the namespace that the app owns.
	owned []kpackv1alpha2.Builder
	// image is the app's kpack Image as it is; nil if there is none.
	image *kpackv1alpha2.Image
	// limits bound the build pods, as the manager was configured.
	limits BuildLimits
}

// stagingPlan is what a reconcile of a CFBuild decides: its status, and what to apply.
type stagingPlan struct {
	conditions []metav1.Condition
	builder    string
	kpackBuild string
	droplet    *cfv1alpha1.BuildDropletStatus
	// rebuild is what a rebuild started from; nil for a build that a CFBuild asked for.
	rebuild *cfv1alpha1.RebuildStatus
	// dedicated is the Builder to apply and to add the app to the owners of; nil for none.
	dedicated *kpackv1alpha2.Builder
	// image is the app's Image to apply; nil until the build can start.
	image *kpackv1alpha2.Image
	// release are the app's dedicated Builders that its Image no longer builds with: the app
	// stops owning them, and one that no other app owns is deleted.
	release []builderRelease
}

// planStaging decides the next step of a CFBuild: follow its kpack Build, or wait for what it
// needs, or make its Builder and point the app's Image at its package.
func planStaging(in stagingInputs) stagingPlan {
	if in.following != "" || in.kpackBuild != nil {
		return follow(in)
	}
	build := in.build
	switch {
	case in.app == nil:
		return waiting(cfv1alpha1.WaitingReason, "app %s does not exist", build.Spec.AppRef.Name)
	case in.active != build.Name:
		return waiting(cfv1alpha1.QueuedReason, "builds of app %s stage one at a time; waiting for build %s", in.app.Name, in.active)
	case in.pkg == nil || in.pkg.Spec.Source.Registry.Image == "":
		return waiting(cfv1alpha1.WaitingReason, "package %s is not uploaded", build.Spec.PackageRef.Name)
	}
	ready := meta.FindStatusCondition(in.space.Status.Conditions, cfv1alpha1.BuildReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		return waiting(cfv1alpha1.WaitingReason, "space %s cannot build: %s", in.space.Name, conditionMessage(ready))
	}
	if in.defaultBuilder == nil {
		return waiting(cfv1alpha1.BuilderNotReadyReason, "the space's default Builder %s/%s is gone",
			in.space.Status.Build.Builder.From, in.space.Status.Build.Builder.Name)
	}
	config := in.space.Status.Build
	var p stagingPlan
	builderRef := defaultBuilderRef(config)
	if lifecycle := builders.EffectiveLifecycle(build, in.app); !builders.UsesDefaultBuilder(lifecycle, in.defaultBuilder) {
		p.dedicated = builders.DesiredDedicatedBuilder(build.Namespace, lifecycle, in.defaultBuilder, config)
		if in.dedicated == nil || !buildconfig.Ready(&in.dedicated.Status, in.dedicated.Generation) {
			if cannot := builderFailure(in.dedicated, p.dedicated); cannot != "" {
				return failed(cfv1alpha1.BuilderNotReadyReason, "kpack cannot make Builder %s, of stack %s and the buildpacks the lifecycle names: %s",
					p.dedicated.Name, p.dedicated.Spec.Stack.Name, cannot)
			}
			w := waiting(cfv1alpha1.BuilderNotReadyReason, "Builder %s is not ready yet", p.dedicated.Name)
			w.dedicated = p.dedicated
			return w
		}
		builderRef.Kind, builderRef.Name = kpackv1alpha2.BuilderKind, p.dedicated.Name
	}
	p.image = desiredImage(in.app, build, in.pkg, builderRef, config, in.limits)
	p.release = planRelease(in.owned, in.app, builderRef)
	message := fmt.Sprintf("waiting for kpack to start a build of Image %s with %s %s", in.app.Name, builderRef.Kind, builderRef.Name)
	p.conditions = []metav1.Condition{
		{Type: cfv1alpha1.StagingCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.BuildScheduledReason, Message: message},
		{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionUnknown, Reason: cfv1alpha1.BuildScheduledReason, Message: "staging"},
	}
	return p
}

// builderFailure is why kpack reports a dedicated Builder not Ready for the spec cf-hnc wants
// of it (desired): the error of kpack's last attempt (its UpToDate condition), else its Ready
// message. It is "" while the Builder may still become ready: kpack has not reconciled its
// current generation, or cf-hnc is about to change its spec (an operator changed the default
// Builder or the space's build configuration). kpack keeps a Builder that built once Ready with
// its last image, so only a Builder that never built fails a build.
func builderFailure(current, desired *kpackv1alpha2.Builder) string {
	if current == nil || current.Status.ObservedGeneration != current.Generation || !holdsSpec(current, desired) {
		return ""
	}
	ready := current.Status.GetCondition(corev1alpha1.ConditionReady)
	switch upToDate := current.Status.GetCondition(kpackv1alpha2.ConditionUpToDate); {
	case !ready.IsFalse():
		return ""
	case upToDate.IsFalse() && upToDate.Message != "":
		return upToDate.Message
	case ready.Message != "":
		return ready.Message
	}
	return "kpack reports it not Ready"
}

// holdsSpec says whether a Builder as it is holds every field of the spec cf-hnc wants of it,
// so that applying it changes nothing and kpack's status of its generation is about that spec.
func holdsSpec(current, desired *kpackv1alpha2.Builder) bool {
	have, want := current.Spec, desired.Spec
	return have.Tag == want.Tag && have.Stack == want.Stack && have.Store == want.Store && have.Lifecycle == want.Lifecycle &&
		have.ServiceAccountName == want.ServiceAccountName && equality.Semantic.DeepEqual(have.Order, want.Order)
}

// failed is the plan of a build that ended without a droplet, before or without kpack.
func failed(reason, format string, args ...any) stagingPlan {
	message := fmt.Sprintf(format, args...)
	return stagingPlan{conditions: []metav1.Condition{
		{Type: cfv1alpha1.StagingCondition, Status: metav1.ConditionFalse, Reason: reason, Message: message},
		{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: reason, Message: message},
	}}
}

// waiting is the plan of a build that cannot start yet: not failed, not staging.
func waiting(reason, format string, args ...any) stagingPlan {
	message := fmt.Sprintf(format, args...)
	return stagingPlan{conditions: []metav1.Condition{
		{Type: cfv1alpha1.StagingCondition, Status: metav1.ConditionFalse, Reason: reason, Message: message},
		{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionUnknown, Reason: reason, Message: message},
	}}
}

// follow mirrors the kpack Build into the CFBuild, with the droplet once it succeeded. A
// CFBuild marked as a rebuild follows its kpack Build only if that Build bears it out.
func follow(in stagingInputs) stagingPlan {
	kb := in.kpackBuild
	if kb == nil {
		p := failed(cfv1alpha1.KpackBuildMissingReason, "kpack build %s does not exist any more", in.following)
		p.kpackBuild = in.following
		return p
	}
	_, rebuild := in.build.Labels[cfv1alpha1.KpackBuildLabel]
	if rebuild {
		if mismatch := RebuildMismatch(in.build, kb, in.rebuilt); mismatch != "" {
			return failed(cfv1alpha1.NotARebuildReason,
				"CFBuild %s is marked as a rebuild, but %s: cf-hnc takes no droplet from it; delete it", in.build.Name, mismatch)
		}
	}
	p := stagingPlan{kpackBuild: kb.Name, builder: kb.Annotations[kpackv1alpha2.BuilderNameAnnotation]}
	if rebuild {
		p.rebuild = &cfv1alpha1.RebuildStatus{RunImage: kb.Spec.RunImage.Image}
		if kb.Spec.LastBuild != nil {
			p.rebuild.Image = kb.Spec.LastBuild.Image
		}
	}
	done := kb.Status.GetCondition(corev1alpha1.ConditionSucceeded)
	switch {
	case done.IsTrue():
		p.conditions = []metav1.Condition{
			{Type: cfv1alpha1.StagingCondition, Status: metav1.ConditionFalse, Reason: cfv1alpha1.BuildSucceededReason,
				Message: fmt.Sprintf("kpack build %s succeeded", kb.Name)},
			{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.BuildSucceededReason,
				Message: fmt.Sprintf("droplet %s", kb.Status.LatestImage)},
		}
		p.droplet = droplet(kb, in.space.Status.Build, in.processes)
	case done.IsFalse():
		reason, message := failure(kb, in.failedStep)
		p.conditions = []metav1.Condition{
			{Type: cfv1alpha1.StagingCondition, Status: metav1.ConditionFalse, Reason: cfv1alpha1.BuildFailedReason, Message: message},
			{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: reason, Message: message},
		}
	default:
		message := runningMessage(kb, in.unschedulable)
		p.conditions = []metav1.Condition{
			{Type: cfv1alpha1.StagingCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.BuildRunningReason, Message: message},
			{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionUnknown, Reason: cfv1alpha1.BuildRunningReason, Message: message},
		}
	}
	return p
}

// runningMessage says how far a running kpack Build got, and what its pod waits for: a node
// (unschedulable is the scheduler's reason), or a step that cannot start (its image cannot be
// pulled, say), which kpack reports as the reason of its condition.
func runningMessage(kb *kpackv1alpha2.Build, unschedulable string) string {
	message := fmt.Sprintf("kpack build %s is running", kb.Name)
	if unschedulable != "" {
		return fmt.Sprintf("kpack build %s waits for a node: %s", kb.Name, unschedulable)
	}
	if len(kb.Status.StepsCompleted) > 0 {
		message += "; steps completed: " + strings.Join(kb.Status.StepsCompleted, ", ")
	}
	if c := kb.Status.GetCondition(corev1alpha1.ConditionSucceeded); c != nil && c.Reason != "" && c.Message != "" {
		message += fmt.Sprintf("; %s: %s", c.Reason, c.Message)
	}
	return message
}

// failedStep is a step of a kpack build pod that exited with an error.
type failedStep struct {
	name     string
	exitCode int32
	// stopped says what stopped the step, when it did not fail on its own: one of the build
	// limits.
	stopped string
	// log is the end of the step's log, as the kubelet keeps it in the termination message:
	// the policy cf-hnc-build-step-messages asks it to for kpack's steps.
	log string
}

// stoppedBy says which limit stopped a failed step of a build pod, "" if none did: the
// kubelet stops a pod past its deadline (the build timeout) and evicts one over its disk
// limit, saying so on the pod; the kernel kills a step over its memory limit (OOMKilled).
func stoppedBy(pod *corev1.Pod, step string, t *corev1.ContainerStateTerminated) string {
	switch {
	case pod.Status.Reason == "DeadlineExceeded" && pod.Spec.ActiveDeadlineSeconds != nil:
		return fmt.Sprintf("the build ran longer than its timeout of %s", time.Duration(*pod.Spec.ActiveDeadlineSeconds)*time.Second)
	case pod.Status.Reason != "":
		return strings.TrimSpace(pod.Status.Reason + ": " + pod.Status.Message)
	case t.Reason == "OOMKilled":
		for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
			if limit, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && c.Name == step {
				return "OOMKilled: the step needed more than its memory limit of " + limit.String()
			}
		}
		return "OOMKilled"
	}
	return ""
}

// failure is the reason and message of a failed kpack Build: the step that failed, its exit
// code and the end of its log; or, without a failed step, kpack's own message.
func failure(kb *kpackv1alpha2.Build, step *failedStep) (reason, message string) {
	reason, message = cfv1alpha1.BuildFailedReason, fmt.Sprintf("kpack build %s failed", kb.Name)
	c := kb.Status.GetCondition(corev1alpha1.ConditionSucceeded)
	if c != nil && c.Reason != "" {
		reason = c.Reason
	}
	switch {
	case step != nil:
		message += fmt.Sprintf(" in step %s (exit code %d)", step.name, step.exitCode)
		details := logtext.LastLines(step.log, failureLogLines)
		if step.stopped != "" {
			details = append([]string{step.stopped}, details...)
		}
		if lines := strings.Join(details, "; "); lines != "" {
			message += ": " + lines
		}
	case c != nil && c.Message != "":
		message += ": " + c.Message
	}
	return reason, message
}

// failureLogLines bounds the log lines of a failed step that a condition repeats.
const failureLogLines = 6

// droplet is the droplet a succeeded kpack Build staged.
func droplet(kb *kpackv1alpha2.Build, space *cfv1alpha1.SpaceBuildConfig, processes []cfv1alpha1.ProcessType) *cfv1alpha1.BuildDropletStatus {
	d := &cfv1alpha1.BuildDropletStatus{
		Registry:         cfv1alpha1.Registry{Image: kb.Status.LatestImage},
		Stack:            kb.Status.Stack.ID,
		RunImage:         kb.Status.Stack.RunImage,
		LifecycleVersion: kb.Status.LifecycleVersion,
		ProcessTypes:     processes,
	}
	if space != nil {
		d.Registry.ImagePullSecrets = space.SecretNames()
	}
	for _, bp := range kb.Status.BuildMetadata {
		d.Buildpacks = append(d.Buildpacks, cfv1alpha1.BuildpackVersion{ID: bp.Id, Version: bp.Version})
	}
	return d
}

func conditionMessage(c *metav1.Condition) string {
	if c == nil {
		return "its build readiness is not known yet"
	}
	return c.Message
}
