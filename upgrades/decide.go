package upgrades

import (
	"cmp"
	"fmt"
	"slices"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/staging"
)

// dropletInputs is what the droplet an app should run depends on, as observed.
type dropletInputs struct {
	app *cfv1alpha1.CFApp
	// current is the CFBuild whose droplet the app runs; nil if it has none or it is gone.
	current *cfv1alpha1.CFBuild
	// lineage are the droplets of the current droplet's package: the lineage's first CFBuild
	// and every rebuild of it, the current one included.
	lineage []cfv1alpha1.CFBuild
	policy  cfv1alpha1.BuildpackUpgradePolicy
	// builder is what the Builder of the app's kpack Image gives now; nil while it is not known
	// (no Image, no Builder, or a Builder that kpack has not made ready).
	builder *builderStack
	// kpackLatest is the latest Build of the app's kpack Image; nil if there is none.
	kpackLatest *kpackv1alpha2.Build
	// image is the app's kpack Image, and pkg the package of the current droplet: what cf-hnc's
	// own rebase builds with. Either is nil if it does not exist.
	image *kpackv1alpha2.Image
	pkg   *cfv1alpha1.CFPackage
	// takenRebuilds are the names of rebuilds that the app's stack fix may wait for which
	// CFBuilds hold that are not those rebuilds (rebuildNameTaken).
	takenRebuilds sets.Set[string]
}

// builderStack is what a kpack Builder or ClusterBuilder gives builds.
type builderStack struct {
	kind, name string
	// stack is the stack id, runImage the stack's run image as the Builder gives it.
	stack, runImage string
	// image is the builder image.
	image string
	// buildpacks and lifecycle are the buildpacks and the lifecycle version it builds with.
	buildpacks []cfv1alpha1.BuildpackVersion
	lifecycle  string
}

// dropletDecision is what the app reconciler decides: the app's status, the droplet to move
// it to, and whether to rebase its droplet itself.
type dropletDecision struct {
	condition metav1.Condition
	held      *corev1.LocalObjectReference
	droplet   *cfv1alpha1.AppDropletStatus
	// moveTo is the droplet the app moves to, and why; nil to stay.
	moveTo *cfv1alpha1.CFBuild
	why    string
	// rebase is the kpack Build that rebases the running droplet onto the Builder's run image,
	// named droplet.Rebuild, to start; nil for none.
	rebase *kpackv1alpha2.Build
}

// decideDroplet decides what the app runs. A stack fix (a rebuilt droplet that differs from
// the running one in its run image only) is deployed under every policy; an upgrade (another
// stack, other buildpacks, another lifecycle) is deployed under Automatic and held under Held.
// The app reconciler rebases the running droplet itself when kpack's Image will not.
func decideDroplet(in dropletInputs) dropletDecision {
	d := decideRun(in)
	if name := takenRebuild(in, d); name != "" {
		d.condition = dropletCondition(metav1.ConditionFalse, cfv1alpha1.RebuildFailedReason,
			"kpack build %s rebuilds the app's droplet, but a CFBuild that cf-hnc did not make has the name %s of its rebuild; delete CFBuild %s and cf-hnc makes the rebuild",
			name, name, name)
	}
	return d
}

// takenRebuild is the name of a rebuild that the decision waits for, or kpack's latest build of
// the app's Image, that a CFBuild holds which is not that rebuild; "" if none is. The app says
// so: else it would say Rebuilding, or UpToDate, for ever, and the count of apps by reason
// would hide it.
func takenRebuild(in dropletInputs, d dropletDecision) string {
	var rebuilds []string
	if d.droplet != nil && d.droplet.Rebuild != nil {
		rebuilds = append(rebuilds, d.droplet.Rebuild.Name)
	}
	if in.kpackLatest != nil {
		rebuilds = append(rebuilds, in.kpackLatest.Name)
	}
	for _, name := range rebuilds {
		if in.takenRebuilds.Has(name) {
			return name
		}
	}
	return ""
}

// decideRun decides which droplet the app runs, and how its stack fix goes.
func decideRun(in dropletInputs) dropletDecision {
	switch {
	case in.app.Spec.CurrentDropletRef.Name == "":
		return dropletDecision{condition: dropletCondition(metav1.ConditionUnknown, cfv1alpha1.NoDropletReason, "the app has no droplet yet")}
	case in.current == nil:
		return dropletDecision{condition: dropletCondition(metav1.ConditionFalse, cfv1alpha1.DropletMissingReason,
			"the app's droplet, CFBuild %s, does not exist", in.app.Spec.CurrentDropletRef.Name)}
	case in.current.StagedDroplet() == nil:
		return dropletDecision{condition: dropletCondition(metav1.ConditionFalse, cfv1alpha1.DropletMissingReason,
			"the app's droplet, CFBuild %s, has not succeeded", in.current.Name)}
	}
	running := in.current.StagedDroplet()
	d := dropletDecision{droplet: &cfv1alpha1.AppDropletStatus{Stack: running.Stack, RunImage: running.RunImage}}

	if upgrade := newestUpgrade(in.lineage, in.current, in.builder); upgrade != nil {
		if in.policy == cfv1alpha1.AutomaticUpgrades {
			d.moveTo, d.why = upgrade, fmt.Sprintf("which kpack rebuilt because of %s (%s)",
				upgrade.Annotations[cfv1alpha1.RebuildReasonAnnotation], describeChange(running, upgrade.StagedDroplet()))
			d.condition = dropletCondition(metav1.ConditionTrue, cfv1alpha1.UpToDateReason, "the app moves to droplet %s", upgrade.Name)
			return d
		}
		d.held = &corev1.LocalObjectReference{Name: upgrade.Name}
	}
	fix := planStackFix(in, running)
	d.droplet.LatestRunImage, d.droplet.Rebuild = fix.latestRunImage, fix.rebuild
	if fix.start && in.image != nil {
		d.rebase = desiredRebase(in.app, in.current, in.pkg, in.image, in.builder)
	}
	if in.builder != nil {
		d.droplet.BuilderStack = in.builder.stack
	}
	if fix.deploy != nil {
		d.moveTo, d.why = fix.deploy, fmt.Sprintf("which puts it on the latest run image of stack %s, %s", running.Stack, fix.latestRunImage)
		d.droplet.RunImage = fix.deploy.StagedDroplet().RunImage
	}
	d.condition = d.reason(in, running, fix)
	return d
}

// reason is the app's DropletCurrent condition, the most pressing first: a stack fix that
// failed, one under way, a held upgrade, a stack that gets no fixes any more.
func (d dropletDecision) reason(in dropletInputs, running *cfv1alpha1.BuildDropletStatus, fix stackFix) metav1.Condition {
	switch {
	case fix.state == fixFailed:
		return dropletCondition(metav1.ConditionFalse, cfv1alpha1.RebuildFailedReason,
			"the rebase of droplet %s onto the latest run image of stack %s failed, the app keeps it: %s; to try again, delete kpack Build %s with its pod (--cascade=foreground), then CFBuild %s",
			in.current.Name, running.Stack, fix.message, fix.rebuild.Name, fix.rebuild.Name)
	case fix.state == fixRunning:
		return dropletCondition(metav1.ConditionTrue, cfv1alpha1.RebuildingReason, "%s", fix.message)
	case d.held != nil:
		held := in.heldDroplet(d.held.Name)
		message := fmt.Sprintf("droplet %s (%s) was rebuilt because of %s and is held by the org's %s policy; set spec.currentDropletRef to %s to run it, or restage the app",
			held.Name, describeChange(running, held.StagedDroplet()), held.Annotations[cfv1alpha1.RebuildReasonAnnotation], in.policy, held.Name)
		if fix.state == fixUnavailable {
			message += "; " + fix.message
		}
		return dropletCondition(metav1.ConditionFalse, cfv1alpha1.UpgradeHeldReason, "%s", message)
	case fix.state == fixUnavailable:
		return dropletCondition(metav1.ConditionFalse, cfv1alpha1.NoRunImageReason, "%s", fix.message)
	case fix.latestRunImage != "":
		return dropletCondition(metav1.ConditionTrue, cfv1alpha1.UpToDateReason, "the app runs its newest droplet, on the latest run image of stack %s", running.Stack)
	}
	return dropletCondition(metav1.ConditionTrue, cfv1alpha1.UpToDateReason, "the app runs its newest droplet")
}

func (in dropletInputs) heldDroplet(name string) *cfv1alpha1.CFBuild {
	for i := range in.lineage {
		if in.lineage[i].Name == name {
			return &in.lineage[i]
		}
	}
	return nil
}

// newestUpgrade is the droplet of the lineage to upgrade the running droplet to, or nil: the
// newest one whose content (stack, buildpacks, lifecycle) differs from the running droplet's,
// that the app's Builder still offers (an operator who withdraws a buildpack withdraws the
// droplets built with it), and that came after the running droplet's content. Droplets are
// grouped by content, and a group is as old as its first droplet: a rebase of the running
// droplet, made after a held upgrade, is not newer than that upgrade. When the Builder no
// longer offers the running droplet's content, any droplet made after it that the Builder
// offers is an upgrade: the one that replaces a withdrawn buildpack, too.
func newestUpgrade(lineage []cfv1alpha1.CFBuild, current *cfv1alpha1.CFBuild, builder *builderStack) *cfv1alpha1.CFBuild {
	first := map[string]*cfv1alpha1.CFBuild{}  // the first droplet of each content
	newest := map[string]*cfv1alpha1.CFBuild{} // the newest droplet of each content
	for i := range lineage {
		b := &lineage[i]
		droplet := b.StagedDroplet()
		if droplet == nil {
			continue
		}
		key := contentKey(droplet)
		if f, ok := first[key]; !ok || staging.OlderFirst(b, f) < 0 {
			first[key] = b
		}
		if n, ok := newest[key]; !ok || staging.OlderFirst(b, n) > 0 {
			newest[key] = b
		}
	}
	running := current.StagedDroplet()
	since, ok := first[contentKey(running)]
	if !ok || staging.OlderFirst(current, since) < 0 {
		since = current
	}
	withdrawn := !builder.offers(running)
	var upgrade *cfv1alpha1.CFBuild
	for key, f := range first {
		n := newest[key]
		switch {
		case sameContent(f.StagedDroplet(), running) || !builder.offers(f.StagedDroplet()):
			continue
		case staging.OlderFirst(f, since) > 0 || withdrawn && staging.OlderFirst(n, current) > 0:
			if upgrade == nil || staging.OlderFirst(n, upgrade) > 0 {
				upgrade = n
			}
		}
	}
	return upgrade
}

// offers says whether a Builder builds droplets of this content now: its stack, every one of
// its buildpacks at its version, its lifecycle. A Builder that is not known offers anything.
func (b *builderStack) offers(d *cfv1alpha1.BuildDropletStatus) bool {
	if b == nil {
		return true
	}
	return b.stack == d.Stack &&
		(b.lifecycle == "" || d.LifecycleVersion == "" || b.lifecycle == d.LifecycleVersion) &&
		!slices.ContainsFunc(d.Buildpacks, func(bp cfv1alpha1.BuildpackVersion) bool { return !slices.Contains(b.buildpacks, bp) })
}

// stackFixState is where the stack fix of the running droplet stands.
type stackFixState int

const (
	// fixNone: the droplet is on the latest run image of its stack, or that is not known.
	fixNone stackFixState = iota
	// fixDeploy: a rebased droplet on the latest run image is there to deploy.
	fixDeploy
	// fixRunning: a rebase runs, or kpack is about to start one.
	fixRunning
	// fixFailed: cf-hnc's rebase failed.
	fixFailed
	// fixUnavailable: the app's Builder gives no run image for the droplet's stack.
	fixUnavailable
)

// stackFix is where the stack fix of the running droplet stands, and what to do about it.
type stackFix struct {
	state stackFixState
	// latestRunImage is the run image the app's Builder gives for the droplet's stack.
	latestRunImage string
	// deploy is the rebased droplet to move to.
	deploy *cfv1alpha1.CFBuild
	// rebuild is the CFBuild (and kpack Build) that rebases the droplet.
	rebuild *corev1.LocalObjectReference
	// start says to start cf-hnc's own rebase, named rebuild.
	start   bool
	message string
}

// planStackFix decides how the running droplet gets onto the latest run image of its stack:
// deploy a rebased droplet that is there; wait for a rebase that runs, or for kpack's Image,
// when kpack's next build will rebase this very droplet; else rebase it with a kpack Build of
// cf-hnc's own. kpack's Image rebases only its latest image, and only after a successful build:
// not the droplet of an app that was set back, nor that of an app whose latest push failed,
// nor the droplet of an app that holds a buildpack upgrade.
func planStackFix(in dropletInputs, running *cfv1alpha1.BuildDropletStatus) stackFix {
	b := in.builder
	switch {
	case b == nil:
		return stackFix{state: fixNone}
	case b.stack != running.Stack:
		return stackFix{state: fixUnavailable, message: fmt.Sprintf(
			"%s %s builds stack %s now and gives no run image for stack %s of droplet %s, so no stack fix reaches the app; restage it to move it to stack %s",
			b.kind, b.name, b.stack, running.Stack, in.current.Name, b.stack)}
	case cfv1alpha1.SameImage(running.RunImage, b.runImage):
		return stackFix{latestRunImage: b.runImage}
	}
	fix := stackFix{latestRunImage: b.runImage}
	if deploy := rebasedDroplet(in.lineage, running, b.runImage); deploy != nil {
		fix.state, fix.deploy = fixDeploy, deploy
		return fix
	}
	own := rebaseName(in.app.Name, running.Registry.Image, b.runImage)
	for _, attempt := range rebasesOnto(in.lineage, running, b.runImage) {
		c := meta.FindStatusCondition(attempt.Status.Conditions, cfv1alpha1.SucceededCondition)
		switch {
		case c == nil || c.Status == metav1.ConditionUnknown:
			return fix.running(attempt.Name, "CFBuild %s rebases droplet %s onto the latest run image of stack %s", attempt.Name, in.current.Name, running.Stack)
		case attempt.Name != own:
			continue
		case c.Status == metav1.ConditionTrue:
			// Not deployable, or rebasedDroplet would have found it.
			fix.state, fix.rebuild = fixFailed, &corev1.LocalObjectReference{Name: own}
			fix.message = "it changed more than the run image: " + describeChange(running, attempt.StagedDroplet())
			return fix
		default:
			fix.state, fix.rebuild, fix.message = fixFailed, &corev1.LocalObjectReference{Name: own}, c.Message
			return fix
		}
		// kpack's rebase of this droplet failed: cf-hnc tries once with its own.
	}
	if k := in.kpackLatest; k != nil && !k.IsFailure() {
		switch {
		case isRebaseOnto(k, running, b.runImage) || !k.IsSuccess():
			return fix.running(k.Name, "kpack build %s of the app's Image runs; the stack fix of droplet %s follows it", k.Name, in.current.Name)
		case cfv1alpha1.SameImage(k.Status.LatestImage, running.Registry.Image) && !cfv1alpha1.SameImage(k.Status.Stack.RunImage, b.runImage):
			return fix.running(k.Name, "waiting for kpack to rebase droplet %s onto the latest run image of stack %s", in.current.Name, running.Stack)
		}
	}
	fix.start = true
	return fix.running(own, "cf-hnc rebases droplet %s onto the latest run image of stack %s (CFBuild %s)", in.current.Name, running.Stack, own)
}

func (f stackFix) running(rebuild, format string, args ...any) stackFix {
	f.state, f.rebuild, f.message = fixRunning, &corev1.LocalObjectReference{Name: rebuild}, fmt.Sprintf(format, args...)
	return f
}

// rebasedDroplet is the newest droplet of the lineage that differs from the running one only
// in its run image, which is runImage; or nil.
func rebasedDroplet(lineage []cfv1alpha1.CFBuild, running *cfv1alpha1.BuildDropletStatus, runImage string) *cfv1alpha1.CFBuild {
	var found *cfv1alpha1.CFBuild
	for i := range lineage {
		d := lineage[i].StagedDroplet()
		if d != nil && sameContent(d, running) && cfv1alpha1.SameImage(d.RunImage, runImage) && (found == nil || staging.OlderFirst(&lineage[i], found) > 0) {
			found = &lineage[i]
		}
	}
	return found
}

// rebasesOnto are the rebuilds of the lineage that rebase the running droplet onto runImage,
// oldest first.
func rebasesOnto(lineage []cfv1alpha1.CFBuild, running *cfv1alpha1.BuildDropletStatus, runImage string) []*cfv1alpha1.CFBuild {
	var attempts []*cfv1alpha1.CFBuild
	for i := range lineage {
		b := &lineage[i]
		if r := b.Status.Rebuild; r != nil && b.Annotations[cfv1alpha1.RebuildReasonAnnotation] == staging.RebaseReason &&
			cfv1alpha1.SameImage(r.Image, running.Registry.Image) && cfv1alpha1.SameImage(r.RunImage, runImage) {
			attempts = append(attempts, b)
		}
	}
	slices.SortFunc(attempts, staging.OlderFirst)
	return attempts
}

// isRebaseOnto says whether a kpack Build rebases the running droplet onto runImage.
func isRebaseOnto(kb *kpackv1alpha2.Build, running *cfv1alpha1.BuildDropletStatus, runImage string) bool {
	last := kb.Spec.LastBuild
	return kb.Annotations[kpackv1alpha2.BuildReasonAnnotation] == staging.RebaseReason && last != nil &&
		last.StackId == running.Stack && cfv1alpha1.SameImage(last.Image, running.Registry.Image) && cfv1alpha1.SameImage(kb.Spec.RunImage.Image, runImage)
}

// latestKpackBuild is the Build of an Image with the highest build number.
func latestKpackBuild(builds []kpackv1alpha2.Build) *kpackv1alpha2.Build {
	if len(builds) == 0 {
		return nil
	}
	latest := slices.MaxFunc(builds, func(a, b kpackv1alpha2.Build) int {
		return cmp.Or(cmp.Compare(staging.BuildNumber(&a), staging.BuildNumber(&b)), cmp.Compare(a.Name, b.Name))
	})
	return &latest
}

// builderStackOf is what a ready Builder or ClusterBuilder gives; nil if it is not ready.
func builderStackOf(kind, name string, generation int64, status *kpackv1alpha2.BuilderStatus) *builderStack {
	if !status.GetCondition(corev1alpha1.ConditionReady).IsTrue() || status.ObservedGeneration != generation || status.Stack.ID == "" {
		return nil
	}
	b := &builderStack{kind: kind, name: name, stack: status.Stack.ID, runImage: status.Stack.RunImage, image: status.LatestImage, lifecycle: status.Lifecycle.Version}
	for _, bp := range status.BuilderMetadata {
		b.buildpacks = append(b.buildpacks, cfv1alpha1.BuildpackVersion{ID: bp.Id, Version: bp.Version})
	}
	return b
}

func dropletCondition(s metav1.ConditionStatus, reason, format string, args ...any) metav1.Condition {
	return metav1.Condition{Type: cfv1alpha1.DropletCurrentCondition, Status: s, Reason: reason, Message: fmt.Sprintf(format, args...)}
}
