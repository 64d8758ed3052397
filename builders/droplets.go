package builders

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// What a droplet is made of decides what may happen to an app, not kpack's reason for a
// rebuild: kpack says STACK for any change of its Builder's run image, a move to another stack
// included, and a rebase of kpack's latest image carries whatever buildpacks that image has.
// A rebuilt droplet whose stack id, buildpacks and lifecycle are those of the running droplet
// differs only in its run image, which the stack's ABI contract keeps compatible: it is a stack
// fix, deployed under every policy. Any other difference is an upgrade, which the org's
// BuildpackUpgradePolicy decides on.

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

// digestOf is the digest of an image reference, or the reference itself if it has none. The
// same run image is named from different repositories (the stack's, a Builder's copy of it):
// only the digest says whether two are the same image.
func digestOf(ref string) string {
	if _, digest, ok := strings.Cut(ref, "@"); ok {
		return digest
	}
	return ref
}

// sameImage says whether two image references name the same image.
func sameImage(a, b string) bool {
	return a != "" && b != "" && digestOf(a) == digestOf(b)
}

// succeededDroplet is a build's droplet once it succeeded for its generation, else nil.
func succeededDroplet(b *cfv1alpha1.CFBuild) *cfv1alpha1.BuildDropletStatus {
	c := meta.FindStatusCondition(b.Status.Conditions, cfv1alpha1.SucceededCondition)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return b.Status.Droplet
}

// olderFirst orders builds by creation, then (creation times have whole seconds) by kpack's
// build number, the first build of a lineage having none, then by name: the order in which
// kpack started them.
func olderFirst(a, b *cfv1alpha1.CFBuild) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(rebuildNumber(a), rebuildNumber(b)), cmp.Compare(a.Name, b.Name))
}

// rebuildNumber is kpack's number of the build a rebuild follows; 0 for others.
func rebuildNumber(b *cfv1alpha1.CFBuild) int {
	n, _ := strconv.Atoi(b.Labels[cfv1alpha1.KpackBuildNumberLabel])
	return n
}
