package v1alpha1

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The states of apps, packages and builds as Cloud Foundry names them, decided once here for the
// reconcilers, the CF API and kubectl cf.

// GetDisplayName returns the app's name, which is unique in its space as Cloud Foundry compares
// names (DisplayNameOwner).
func (a *CFApp) GetDisplayName() string { return a.Spec.DisplayName }

// Uploaded says whether the package has its bits: the image its upload made. Cloud Foundry calls
// such a package READY, and stages only those.
func (p *CFPackage) Uploaded() bool { return p.Spec.Source.Registry.Image != "" }

// Equal says whether two lifecycles name the same type, stack and buildpacks in the same order.
func (l Lifecycle) Equal(other Lifecycle) bool {
	return l.Type == other.Type && l.Data.Stack == other.Data.Stack && slices.Equal(l.Data.Buildpacks, other.Data.Buildpacks)
}

// BuildState is the state of a build, with Cloud Foundry's names.
type BuildState string

const (
	// BuildStaging: the build waits, is queued or builds.
	BuildStaging BuildState = "STAGING"
	// BuildStaged: the build staged a droplet (StagedDroplet).
	BuildStaged BuildState = "STAGED"
	// BuildFailed: the build ended without a droplet.
	BuildFailed BuildState = "FAILED"
)

// succeeded is the build's Succeeded condition if it describes the build's current generation:
// a condition written for an earlier spec says nothing of this one.
func (b *CFBuild) succeeded() *metav1.Condition {
	c := meta.FindStatusCondition(b.Status.Conditions, SucceededCondition)
	if c == nil || c.ObservedGeneration != b.Generation {
		return nil
	}
	return c
}

// StagedDroplet returns the droplet that the build staged: Succeeded is True for the build's
// current generation and cf-hnc recorded the droplet. Otherwise nil. It is the one answer to
// "has this build staged a droplet?".
func (b *CFBuild) StagedDroplet() *BuildDropletStatus {
	if c := b.succeeded(); c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return b.Status.Droplet
}

// State is the build's state, and its Succeeded condition of the current generation (nil while
// there is none): STAGED once it has a staged droplet, FAILED when Succeeded is False (its
// message says why), else STAGING. The cf CLI polls a build while it is STAGING and takes any
// other state but FAILED as staged, with a droplet.
func (b *CFBuild) State() (BuildState, *metav1.Condition) {
	c := b.succeeded()
	switch {
	case b.StagedDroplet() != nil:
		return BuildStaged, c
	case c != nil && c.Status == metav1.ConditionFalse:
		return BuildFailed, c
	}
	return BuildStaging, c
}

// Finished says whether the build has reached its end, STAGED or FAILED: cf-hnc stages it no
// further.
func (b *CFBuild) Finished() bool {
	state, _ := b.State()
	return state != BuildStaging
}
