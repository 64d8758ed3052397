package upgrades

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// A small world of droplets: app "app" runs droplet "a" (Node.js 1.0.0 on jammy, run image
// r1); the operator fixes the run image (r2), upgrades Node.js (1.1.0) or moves the app's
// Builder to another stack (noble).
const (
	jammy, noble = "io.buildpacks.stacks.jammy", "io.buildpacks.stacks.noble"
	r1, r2       = "registry.local/run@sha256:r1", "registry.local/run@sha256:r2"
	n1           = "registry.local/noble/run@sha256:n1"
)

var (
	epoch    = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	nodejs10 = cfv1alpha1.BuildpackVersion{ID: "paketo-buildpacks/nodejs", Version: "1.0.0"}
	nodejs11 = cfv1alpha1.BuildpackVersion{ID: "paketo-buildpacks/nodejs", Version: "1.1.0"}
)

// stagedDroplet is a CFBuild of the app, created at minute, that succeeded with a droplet.
func stagedDroplet(name string, minute int, stack, runImage string, bp cfv1alpha1.BuildpackVersion) cfv1alpha1.CFBuild {
	b := cfv1alpha1.CFBuild{
		ObjectMeta: metav1.ObjectMeta{Namespace: "space", Name: name, CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(minute) * time.Minute))},
		Spec:       cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: "app"}, PackageRef: corev1.LocalObjectReference{Name: "package"}},
		Status: cfv1alpha1.CFBuildStatus{
			Conditions: []metav1.Condition{{Type: cfv1alpha1.SucceededCondition, Status: metav1.ConditionTrue}},
			Droplet: &cfv1alpha1.BuildDropletStatus{
				Registry: cfv1alpha1.Registry{Image: "registry.local/org/app@sha256:" + name},
				Stack:    stack, RunImage: runImage, Buildpacks: []cfv1alpha1.BuildpackVersion{bp}, LifecycleVersion: "0.20.0",
			},
		},
	}
	if name != "a" {
		b.Labels = map[string]string{cfv1alpha1.RebuildOfLabel: "a"}
	}
	return b
}

// rebaseOf marks a rebuild as a rebase (reason STACK) of another droplet onto runImage.
func rebaseOf(b cfv1alpha1.CFBuild, of cfv1alpha1.CFBuild, runImage string) cfv1alpha1.CFBuild {
	b.Annotations = map[string]string{cfv1alpha1.RebuildReasonAnnotation: "STACK"}
	b.Status.Rebuild = &cfv1alpha1.RebuildStatus{Image: of.Status.Droplet.Registry.Image, RunImage: runImage}
	return b
}

func because(reason string, b cfv1alpha1.CFBuild) cfv1alpha1.CFBuild {
	b.Annotations = map[string]string{cfv1alpha1.RebuildReasonAnnotation: reason}
	return b
}

func withStatus(b cfv1alpha1.CFBuild, s metav1.ConditionStatus, message string) cfv1alpha1.CFBuild {
	b.Status.Conditions = []metav1.Condition{{Type: cfv1alpha1.SucceededCondition, Status: s, Message: message}}
	if s != metav1.ConditionTrue {
		b.Status.Droplet = nil
	}
	return b
}

// kpackBuild is the latest kpack Build of the app's Image.
func kpackBuild(reason string, status corev1.ConditionStatus, lastImage, runImage, latestImage, latestRunImage string) *kpackv1alpha2.Build {
	kb := &kpackv1alpha2.Build{
		ObjectMeta: metav1.ObjectMeta{Name: "app-build-9", Labels: map[string]string{kpackv1alpha2.BuildNumberLabel: "9"},
			Annotations: map[string]string{kpackv1alpha2.BuildReasonAnnotation: reason}},
		Spec: kpackv1alpha2.BuildSpec{RunImage: kpackv1alpha2.BuildSpecImage{Image: runImage},
			LastBuild: &kpackv1alpha2.LastBuild{Image: lastImage, StackId: jammy}},
	}
	kb.Status.Conditions = corev1alpha1.Conditions{{Type: corev1alpha1.ConditionSucceeded, Status: status}}
	kb.Status.LatestImage, kb.Status.Stack.RunImage = latestImage, latestRunImage
	return kb
}

// builderOn is the app's Builder on a stack and run image, with Node.js 1.0.0 unless it says
// which buildpacks.
func builderOn(stack, runImage string, buildpacks ...cfv1alpha1.BuildpackVersion) *builderStack {
	if len(buildpacks) == 0 {
		buildpacks = []cfv1alpha1.BuildpackVersion{nodejs10}
	}
	return &builderStack{kind: kpackv1alpha2.ClusterBuilderKind, name: "cf.default", stack: stack, runImage: runImage,
		image: "registry.local/builder@sha256:b", buildpacks: buildpacks, lifecycle: "0.20.0"}
}

var (
	a  = stagedDroplet("a", 0, jammy, r1, nodejs10)
	a2 = rebaseOf(stagedDroplet("a2", 30, jammy, r2, nodejs10), a, r2) // a rebased onto the fix
	h  = because("BUILDPACK", stagedDroplet("h", 10, jammy, r1, nodejs11))
	h2 = rebaseOf(stagedDroplet("h2", 20, jammy, r2, nodejs11), h, r2) // kpack rebases its latest image, h
	m  = because("STACK", stagedDroplet("m", 10, noble, n1, nodejs10)) // the app's Builder moved to noble
)

// running is the app running droplet current of lineage, with the given policy and Builder.
func running(current cfv1alpha1.CFBuild, policy cfv1alpha1.BuildpackUpgradePolicy, builder *builderStack, kpackLatest *kpackv1alpha2.Build, lineage ...cfv1alpha1.CFBuild) dropletInputs {
	return dropletInputs{
		app: &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: "space", Name: "app"},
			Spec: cfv1alpha1.CFAppSpec{CurrentDropletRef: corev1.LocalObjectReference{Name: current.Name}}},
		current:     &current,
		lineage:     append([]cfv1alpha1.CFBuild{current}, lineage...),
		policy:      policy,
		builder:     builder,
		kpackLatest: kpackLatest,
		image: &kpackv1alpha2.Image{ObjectMeta: metav1.ObjectMeta{Namespace: "space", Name: "app"},
			Spec: kpackv1alpha2.ImageSpec{Tag: "registry.local/org/app", ServiceAccountName: "cf-build-org"}},
	}
}

var _ = Describe("deciding an app's droplet", func() {
	// kpack's rebase of its latest image, a's, finished: what kpack does when a is its latest.
	kpackRebasedA := kpackBuild("STACK", corev1.ConditionTrue, a.Status.Droplet.Registry.Image, r2, "registry.local/org/app@sha256:a2", r2)
	held, automatic := cfv1alpha1.HeldUpgrades, cfv1alpha1.AutomaticUpgrades
	own := rebaseName("app", a.Status.Droplet.Registry.Image, r2)

	type outcome struct {
		reason string
		moveTo string
		held   string
		rebase bool
	}
	decide := func(in dropletInputs) outcome {
		d := decideDroplet(in)
		o := outcome{reason: d.condition.Reason, rebase: d.rebase != nil}
		if d.moveTo != nil {
			o.moveTo = d.moveTo.Name
		}
		if d.held != nil {
			o.held = d.held.Name
		}
		return o
	}

	DescribeTable("deploys a stack fix under every policy, an upgrade under Automatic only",
		func(in dropletInputs, want outcome) { Expect(decide(in)).To(Equal(want)) },
		Entry("on the latest run image", running(a, held, builderOn(jammy, r1), nil),
			outcome{reason: cfv1alpha1.UpToDateReason}),
		Entry("the Builder not known yet", running(a, held, nil, nil),
			outcome{reason: cfv1alpha1.UpToDateReason}),
		Entry("a rebase of the droplet on the fixed run image, under Held", running(a, held, builderOn(jammy, r2), kpackRebasedA, a2),
			outcome{reason: cfv1alpha1.UpToDateReason, moveTo: "a2"}),
		Entry("a rebase of the droplet on the fixed run image, under Automatic", running(a, automatic, builderOn(jammy, r2), kpackRebasedA, a2),
			outcome{reason: cfv1alpha1.UpToDateReason, moveTo: "a2"}),
		Entry("new buildpacks, under Held", running(a, held, builderOn(jammy, r1, nodejs11), nil, h),
			outcome{reason: cfv1alpha1.UpgradeHeldReason, held: "h"}),
		Entry("new buildpacks, under Automatic", running(a, automatic, builderOn(jammy, r1, nodejs11), nil, h),
			outcome{reason: cfv1alpha1.UpToDateReason, moveTo: "h"}),
		Entry("new buildpacks that the operator withdrew again, under Held: nothing is held", running(a, held, builderOn(jammy, r1, nodejs10), nil, h),
			outcome{reason: cfv1alpha1.UpToDateReason}),
		Entry("new buildpacks that the operator withdrew again, under Automatic: the app moves to the droplet rebuilt without them",
			running(h, automatic, builderOn(jammy, r1, nodejs10), nil, a, because("BUILDPACK", stagedDroplet("r", 50, jammy, r1, nodejs10))),
			outcome{reason: cfv1alpha1.UpToDateReason, moveTo: "r"}),
		Entry("another stack, which kpack also calls STACK, under Held", running(a, held, builderOn(noble, n1), nil, m),
			outcome{reason: cfv1alpha1.UpgradeHeldReason, held: "m"}),
		Entry("another stack, under Automatic", running(a, automatic, builderOn(noble, n1), nil, m),
			outcome{reason: cfv1alpha1.UpToDateReason, moveTo: "m"}),
	)

	DescribeTable("rebases the running droplet itself when kpack's Image will not",
		func(in dropletInputs, want outcome) { Expect(decide(in)).To(Equal(want)) },
		Entry("kpack rebased its latest image, which carries a held upgrade: the rebase is held, the droplet is rebased apart",
			running(a, held, builderOn(jammy, r2, nodejs11), kpackBuild("STACK", corev1.ConditionTrue, h.Status.Droplet.Registry.Image, r2, h2.Status.Droplet.Registry.Image, r2), h, h2),
			outcome{reason: cfv1alpha1.RebuildingReason, held: "h2", rebase: true}),
		Entry("and then deploys that rebase, still holding the upgrade",
			running(a, held, builderOn(jammy, r2, nodejs11), nil, h, h2, rebaseOf(stagedDroplet(own, 40, jammy, r2, nodejs10), a, r2)),
			outcome{reason: cfv1alpha1.UpgradeHeldReason, moveTo: own, held: "h2"}),
		Entry("the app's latest push failed: kpack does not rebuild after a failed build",
			running(a, held, builderOn(jammy, r2), kpackBuild("CONFIG", corev1.ConditionFalse, a.Status.Droplet.Registry.Image, r1, "", "")),
			outcome{reason: cfv1alpha1.RebuildingReason, rebase: true}),
		Entry("the app was set back to an older droplet than kpack's latest",
			running(a, held, builderOn(jammy, r2), kpackBuild("STACK", corev1.ConditionTrue, "registry.local/org/app@sha256:b", r2, "registry.local/org/app@sha256:b2", r2)),
			outcome{reason: cfv1alpha1.RebuildingReason, rebase: true}),
		Entry("kpack's rebase of the droplet failed: cf-hnc tries once more",
			running(a, held, builderOn(jammy, r2), nil, withStatus(rebaseOf(stagedDroplet("a2", 30, jammy, r2, nodejs10), a, r2), metav1.ConditionFalse, "registry down")),
			outcome{reason: cfv1alpha1.RebuildingReason, rebase: true}),
	)

	DescribeTable("waits for kpack when kpack's next build rebases the running droplet",
		func(in dropletInputs, want outcome) { Expect(decide(in)).To(Equal(want)) },
		Entry("kpack has not started it yet",
			running(a, held, builderOn(jammy, r2), kpackBuild("CONFIG", corev1.ConditionTrue, "", r1, a.Status.Droplet.Registry.Image, r1)),
			outcome{reason: cfv1alpha1.RebuildingReason}),
		Entry("kpack's rebase runs", running(a, held, builderOn(jammy, r2), kpackBuild("STACK", corev1.ConditionUnknown, a.Status.Droplet.Registry.Image, r2, "", "")),
			outcome{reason: cfv1alpha1.RebuildingReason}),
		Entry("kpack's rebase succeeded, its CFBuild is not there yet", running(a, held, builderOn(jammy, r2), kpackRebasedA),
			outcome{reason: cfv1alpha1.RebuildingReason}),
		Entry("another build of the Image runs", running(a, held, builderOn(jammy, r2), kpackBuild("CONFIG", corev1.ConditionUnknown, "", r2, "", "")),
			outcome{reason: cfv1alpha1.RebuildingReason}),
	)

	DescribeTable("says why an app cannot be moved, with a reason other than UpToDate",
		func(in dropletInputs, want outcome, message string) {
			Expect(decide(in)).To(Equal(want))
			Expect(decideDroplet(in).condition.Message).To(ContainSubstring(message))
		},
		Entry("cf-hnc's rebase failed", running(a, held, builderOn(jammy, r2), nil, withStatus(rebaseOf(stagedDroplet(own, 30, jammy, r2, nodejs10), a, r2), metav1.ConditionFalse, "rebase failed")),
			outcome{reason: cfv1alpha1.RebuildFailedReason}, "delete kpack Build "+own),
		Entry("its Builder moved to another stack and the rebuild on it failed", running(a, held, builderOn(noble, n1), nil, withStatus(m, metav1.ConditionFalse, "no buildpack")),
			outcome{reason: cfv1alpha1.NoRunImageReason}, "restage it to move it to stack "+noble),
		Entry("a held move to another stack also says that its stack gets no fixes", running(a, held, builderOn(noble, n1), nil, m),
			outcome{reason: cfv1alpha1.UpgradeHeldReason, held: "m"}, "gives no run image for stack "+jammy),
	)

	It("starts cf-hnc's own rebase as a kpack Build of the droplet onto the Builder's run image, named as the status says", func() {
		in := running(a, held, builderOn(jammy, r2), kpackBuild("CONFIG", corev1.ConditionFalse, a.Status.Droplet.Registry.Image, r1, "", ""))
		d := decideDroplet(in)
		Expect(d.rebase).To(And(Not(BeNil()), HaveField("Name", own), HaveField("Spec.RunImage.Image", r2),
			HaveField("Spec.LastBuild", Equal(&kpackv1alpha2.LastBuild{Image: a.Status.Droplet.Registry.Image, StackId: jammy}))))
		Expect(d.droplet.Rebuild).To(Equal(&corev1.LocalObjectReference{Name: own}))

		By("not without the app's Image, which it pushes to")
		in.image = nil
		Expect(decideDroplet(in).rebase).To(BeNil())
	})

	DescribeTable("says RebuildFailed when a CFBuild that cf-hnc did not make holds the name of the rebuild the app waits for",
		func(in dropletInputs, taken string) {
			in.takenRebuilds = sets.New(taken)
			Expect(decideDroplet(in).condition).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cfv1alpha1.RebuildFailedReason),
				HaveField("Message", ContainSubstring("a CFBuild that cf-hnc did not make has the name %s of its rebuild; delete CFBuild %s", taken, taken))))
		},
		Entry("cf-hnc's own rebase", running(a, held, builderOn(jammy, r2), kpackBuild("CONFIG", corev1.ConditionFalse, "", r1, "", "")), own),
		Entry("kpack's latest build of the Image", running(a, held, builderOn(jammy, r1), kpackBuild("BUILDPACK", corev1.ConditionUnknown, "", r1, "", "")), "app-build-9"),
	)

	It("says nothing of a taken name that the app does not wait for", func() {
		in := running(a, held, builderOn(jammy, r1), nil)
		in.takenRebuilds = sets.New(own)
		Expect(decideDroplet(in).condition.Reason).To(Equal(cfv1alpha1.UpToDateReason))
	})

	It("holds an upgrade made before the running droplet's rebase, and nothing older than the running droplet's content", func() {
		rebasedA := rebaseOf(stagedDroplet(own, 40, jammy, r2, nodejs10), a, r2)
		Expect(decide(running(rebasedA, held, builderOn(jammy, r2, nodejs11), nil, a, h, h2))).To(Equal(outcome{reason: cfv1alpha1.UpgradeHeldReason, held: "h2"}))

		restaged := h2 // the user ran the held droplet
		Expect(decide(running(restaged, held, builderOn(jammy, r2, nodejs11), nil, a, h, rebasedA))).To(Equal(outcome{reason: cfv1alpha1.UpToDateReason}))
	})

	It("reports the droplet's stack and run image, the latest run image and the rebuild under way", func() {
		d := decideDroplet(running(a, held, builderOn(jammy, r2), kpackBuild("CONFIG", corev1.ConditionFalse, "", r1, "", "")))
		Expect(d.droplet).To(Equal(&cfv1alpha1.AppDropletStatus{Stack: jammy, RunImage: r1, LatestRunImage: r2, BuilderStack: jammy, Rebuild: &corev1.LocalObjectReference{Name: own}}))
	})

	It("says an app has no droplet, or a missing one", func() {
		in := running(a, held, nil, nil)
		in.app.Spec.CurrentDropletRef.Name = ""
		Expect(decideDroplet(in).condition).To(And(HaveField("Status", metav1.ConditionUnknown), HaveField("Reason", cfv1alpha1.NoDropletReason)))
		in = running(a, held, nil, nil)
		in.current = nil
		Expect(decideDroplet(in).condition.Reason).To(Equal(cfv1alpha1.DropletMissingReason))
	})
})

var _ = Describe("droplet content", func() {
	It("is the stack, the buildpacks and the lifecycle; a droplet without a lifecycle version has the same", func() {
		base := a.Status.Droplet
		for _, c := range []struct {
			change func(*cfv1alpha1.BuildDropletStatus)
			same   bool
		}{
			{func(d *cfv1alpha1.BuildDropletStatus) { d.RunImage = r2 }, true},
			{func(d *cfv1alpha1.BuildDropletStatus) { d.Registry.Image = "other" }, true},
			{func(d *cfv1alpha1.BuildDropletStatus) { d.LifecycleVersion = "" }, true},
			{func(d *cfv1alpha1.BuildDropletStatus) { d.LifecycleVersion = "0.21.0" }, false},
			{func(d *cfv1alpha1.BuildDropletStatus) { d.Stack = noble }, false},
			{func(d *cfv1alpha1.BuildDropletStatus) { d.Buildpacks = []cfv1alpha1.BuildpackVersion{nodejs11} }, false},
		} {
			other := base.DeepCopy()
			c.change(other)
			Expect(sameContent(base, other)).To(Equal(c.same), "%+v", other)
		}
	})

	It("names cf-hnc's rebase after the app, the droplet and the run image, within a label value", func() {
		name := rebaseName("4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10", a.Status.Droplet.Registry.Image, r2)
		Expect(name).To(HavePrefix("4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10-rebase-"))
		Expect(len(name)).To(BeNumerically("<=", 63))
		Expect(rebaseName("4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10", a.Status.Droplet.Registry.Image, r2)).To(Equal(name))
		Expect(rebaseName("4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10", a.Status.Droplet.Registry.Image, "registry.local/run@sha256:r3")).NotTo(Equal(name))
		Expect(len(rebaseName(string(make([]byte, 63)), "x", "y"))).To(BeNumerically("<=", 63))
	})
})
var _ = Describe("cf-hnc's own rebase of a droplet", func() {
	It("is bounded by the limits of the app's last staging, as kpack's rebuilds of the Image are", func() {
		app := &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: "space-1", Name: "app-guid", UID: "app-uid"}}
		limits := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		image := &kpackv1alpha2.Image{Spec: kpackv1alpha2.ImageSpec{Tag: "registry.local/org-a/app-guid",
			Build: &kpackv1alpha2.ImageBuild{Resources: limits, BuildTimeout: ptr.To[int64](900)}}}
		droplet := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Name: "build-guid"}, Status: cfv1alpha1.CFBuildStatus{
			Droplet: &cfv1alpha1.BuildDropletStatus{Registry: cfv1alpha1.Registry{Image: "registry.local/app@sha256:aaaa"}, Stack: "jammy"}}}
		rebase := desiredRebase(app, droplet, nil, image, &builderStack{kind: "ClusterBuilder", name: "cf.default", runImage: "run@sha256:bbbb", image: "builder"})
		Expect(rebase.Spec.ActiveDeadlineSeconds).To(HaveValue(BeEquivalentTo(900)))
		Expect(rebase.Spec.Resources).To(Equal(image.Spec.Build.Resources))
		Expect(rebase.Spec.Resources.Limits).To(HaveKey(corev1.ResourceMemory))
	})
})
