package builders

import (
	"fmt"
	"strings"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// waiting sets the conditions of a build that cannot start yet: not failed, not staging.
func waiting(build *cfv1alpha1.CFBuild, reason, format string, args ...any) {
	message := fmt.Sprintf(format, args...)
	setConditions(build,
		metav1.Condition{Type: cfv1alpha1.StagingCondition, Status: metav1.ConditionFalse, Reason: reason, Message: message},
		metav1.Condition{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionUnknown, Reason: reason, Message: message})
}

// followKpackBuild sets a CFBuild's conditions from its kpack Build, and says whether the
// build succeeded (the droplet is then set by the caller).
func followKpackBuild(build *cfv1alpha1.CFBuild, kb *kpackv1alpha2.Build) (succeeded bool) {
	build.Status.KpackBuild = kb.Name
	build.Status.Builder = kb.Annotations[kpackv1alpha2.BuilderNameAnnotation]
	done := kb.Status.GetCondition(corev1alpha1.ConditionSucceeded)
	switch {
	case done.IsTrue():
		setConditions(build,
			metav1.Condition{Type: cfv1alpha1.StagingCondition, Status: metav1.ConditionFalse, Reason: cfv1alpha1.BuildSucceededReason,
				Message: fmt.Sprintf("kpack build %s succeeded", kb.Name)},
			metav1.Condition{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.BuildSucceededReason,
				Message: fmt.Sprintf("droplet %s", kb.Status.LatestImage)})
		return true
	case done.IsFalse():
		reason, message := failure(kb)
		setConditions(build,
			metav1.Condition{Type: cfv1alpha1.StagingCondition, Status: metav1.ConditionFalse, Reason: cfv1alpha1.BuildFailedReason, Message: message},
			metav1.Condition{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: reason, Message: message})
	default:
		message := fmt.Sprintf("kpack build %s is running", kb.Name)
		if len(kb.Status.StepsCompleted) > 0 {
			message += "; steps completed: " + strings.Join(kb.Status.StepsCompleted, ", ")
		}
		setConditions(build,
			metav1.Condition{Type: cfv1alpha1.StagingCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.BuildRunningReason, Message: message},
			metav1.Condition{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionUnknown, Reason: cfv1alpha1.BuildRunningReason, Message: message})
	}
	return false
}

// failure is the reason and message of a failed kpack Build: kpack's own, and the step that
// failed with its exit code and message.
func failure(kb *kpackv1alpha2.Build) (reason, message string) {
	reason, message = cfv1alpha1.BuildFailedReason, fmt.Sprintf("kpack build %s failed", kb.Name)
	if c := kb.Status.GetCondition(corev1alpha1.ConditionSucceeded); c != nil {
		if c.Reason != "" {
			reason = c.Reason
		}
		if c.Message != "" {
			message += ": " + c.Message
		}
	}
	for _, state := range kb.Status.StepStates {
		if t := state.Terminated; t != nil && t.ExitCode != 0 {
			message += fmt.Sprintf("; a step exited with code %d", t.ExitCode)
			if t.Message != "" {
				message += ": " + t.Message
			}
			break
		}
	}
	return reason, message
}

// droplet is the droplet a succeeded kpack Build staged.
func droplet(kb *kpackv1alpha2.Build, space *cfv1alpha1.SpaceBuildConfig, processes []cfv1alpha1.ProcessType) *cfv1alpha1.BuildDropletStatus {
	d := &cfv1alpha1.BuildDropletStatus{
		Registry:     cfv1alpha1.Registry{Image: kb.Status.LatestImage, ImagePullSecrets: space.SecretNames()},
		Stack:        kb.Status.Stack.ID,
		RunImage:     kb.Status.Stack.RunImage,
		ProcessTypes: processes,
	}
	for _, bp := range kb.Status.BuildMetadata {
		d.Buildpacks = append(d.Buildpacks, cfv1alpha1.BuildpackVersion{ID: bp.Id, Version: bp.Version})
	}
	return d
}

// finished says whether a CFBuild reached its end: Succeeded is True or False for its
// current generation.
func finished(build *cfv1alpha1.CFBuild) bool {
	c := meta.FindStatusCondition(build.Status.Conditions, cfv1alpha1.SucceededCondition)
	return c != nil && c.Status != metav1.ConditionUnknown && c.ObservedGeneration == build.Generation
}

func setConditions(build *cfv1alpha1.CFBuild, conditions ...metav1.Condition) {
	for _, c := range conditions {
		c.ObservedGeneration = build.Generation
		meta.SetStatusCondition(&build.Status.Conditions, c)
	}
}
