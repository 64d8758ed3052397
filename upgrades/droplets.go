package upgrades

import (
	"fmt"
	"slices"
	"strings"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// sameContent says whether two droplets differ at most in their run image. A droplet staged
// before cf-hnc recorded lifecycle versions has none; its lifecycle is then taken as unchanged.
func sameContent(a, b *cfv1alpha1.BuildDropletStatus) bool {
	return a.Stack == b.Stack && slices.Equal(a.Buildpacks, b.Buildpacks) &&
		(a.LifecycleVersion == "" || b.LifecycleVersion == "" || a.LifecycleVersion == b.LifecycleVersion)
}

// contentKey is a droplet's content as a comparable value, consistent with sameContent for
// droplets that all record their lifecycle version or all do not.
func contentKey(d *cfv1alpha1.BuildDropletStatus) string {
	parts := []string{d.Stack, d.LifecycleVersion}
	for _, bp := range d.Buildpacks {
		parts = append(parts, bp.ID+"@"+bp.Version)
	}
	return strings.Join(parts, "\x00")
}

// describeChange says how a droplet's content changes from one droplet to another, for the
// people who decide whether to run it.
func describeChange(from, to *cfv1alpha1.BuildDropletStatus) string {
	var changes []string
	if from.Stack != to.Stack {
		changes = append(changes, fmt.Sprintf("stack %s → %s", from.Stack, to.Stack))
	}
	if !slices.Equal(from.Buildpacks, to.Buildpacks) {
		changes = append(changes, fmt.Sprintf("buildpacks %s → %s", buildpackList(from.Buildpacks), buildpackList(to.Buildpacks)))
	}
	if from.LifecycleVersion != "" && to.LifecycleVersion != "" && from.LifecycleVersion != to.LifecycleVersion {
		changes = append(changes, fmt.Sprintf("lifecycle %s → %s", from.LifecycleVersion, to.LifecycleVersion))
	}
	if len(changes) == 0 {
		return "run image only"
	}
	return strings.Join(changes, ", ")
}

func buildpackList(bps []cfv1alpha1.BuildpackVersion) string {
	names := make([]string, len(bps))
	for i, bp := range bps {
		names[i] = bp.ID + " " + bp.Version
	}
	return "[" + strings.Join(names, ", ") + "]"
}
