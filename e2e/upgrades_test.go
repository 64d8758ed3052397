package e2e_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
	cfrollout "code.cloudfoundry.org/cf-hnc/rollout"
)

// rollout is how long a stack fix may take to reach an app: every app of the suite is
// rebased, a couple of pods at a time.
const rollout = 2 * time.Minute

// A stack run-image fix (same stack id) must reach every app that runs a droplet of that
// stack, whatever happened to the app's later pushes, under both upgrade policies; and only
// the run image may change under Held.
var _ = Describe("A stack run-image fix", Ordered, ContinueOnFailure, func() {
	var (
		org, space                        string
		failedPush, setBack, heldUpgrade  *cfv1alpha1.CFApp
		unrebasable                       *cfv1alpha1.CFApp
		failedPushDroplet, setBackDroplet string
		unrebasableDroplet                string
		heldUpgradeDroplet                string
		heldUpgradeBuildpacks             []cfv1alpha1.BuildpackVersion
		runImage                          string
		badBuildpack                      registry.Buildpack
	)

	BeforeAll(func(ctx SpecContext) {
		org = createOrg(ctx, "fixes-"+string(uuid.NewUUID())[:8])
		space = createSpace(ctx, org, "prod")
		placeOrgRegistry(ctx, org)
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))

		By("an app whose latest push failed")
		failedPush = deployedApp(ctx, org, space)
		failedPushDroplet = failedPush.Spec.CurrentDropletRef.Name
		push := stageSource(ctx, org, failedPush, brokenSource)
		Eventually(succeeded(ctx, push)).Should(HaveField("Status", metav1.ConditionFalse))

		By("an app set back to an older droplet")
		setBack = deployedApp(ctx, org, space)
		setBackDroplet = setBack.Spec.CurrentDropletRef.Name
		newer := stage(ctx, org, setBack)
		Eventually(succeeded(ctx, newer)).Should(HaveField("Status", metav1.ConditionTrue))
		update(ctx, setBack, func() { setBack.Spec.CurrentDropletRef.Name = newer.Name })
		Eventually(dropletCurrent(ctx, setBack)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
		update(ctx, setBack, func() { setBack.Spec.CurrentDropletRef.Name = setBackDroplet })

		By("an app whose every rebase fails: kpack's, and the one cf-hnc tries after it, when the registry refuses to store its rebased droplet")
		unrebasable = deployedApp(ctx, org, space)
		unrebasableDroplet = unrebasable.Spec.CurrentDropletRef.Name
		DeferCleanup(cp.Kpack().Registry.RefusePushes(org+"/"+space+"/"+unrebasable.Name, "quota exceeded for this repository"))

		By("an app whose buildpack upgrade is held")
		heldUpgrade = deployedAppOf(ctx, org, space, procfileSource)
		heldUpgradeDroplet = heldUpgrade.Spec.CurrentDropletRef.Name
		heldUpgradeBuildpacks = getBuild(ctx, space, heldUpgradeDroplet).Status.Droplet.Buildpacks
		var err error
		badBuildpack, err = cp.UpgradeBuildpack(ctx, buildpacks.ProcfileID)
		Expect(err).NotTo(HaveOccurred())
		Eventually(dropletCurrent(ctx, heldUpgrade), rollout).Should(HaveField("Reason", cfv1alpha1.UpgradeHeldReason))

		By("the operator fixing the stack's run image")
		ref, err := cp.UpgradeRunImage(ctx)
		Expect(err).NotTo(HaveOccurred())
		runImage = ref.Digest
	}, NodeTimeout(5*time.Minute))

	It("rebases an app whose latest push failed, and deploys it", func(ctx SpecContext) {
		Eventually(currentDroplet(ctx, failedPush), rollout).ShouldNot(Equal(failedPushDroplet))
		rebased := getBuild(ctx, space, failedPush.Spec.CurrentDropletRef.Name)
		Expect(rebased.Status.Droplet.RunImage).To(HaveSuffix("@" + runImage))
		Expect(rebased.Labels).To(HaveKeyWithValue(cfv1alpha1.RebuildOfLabel, failedPushDroplet))
		Expect(rebased.Annotations).To(HaveKeyWithValue(cfv1alpha1.RebuildReasonAnnotation, "STACK"))
		Expect(rebased.Status.Droplet.Buildpacks).To(Equal(getBuild(ctx, space, failedPushDroplet).Status.Droplet.Buildpacks))

		By("reading the layers kpack's rebase wrote: the fixed run image's under the app's unchanged ones")
		Expect(lifecycleMetadata(rebased.Status.Droplet.Registry.Image, org).RunImage.Reference).To(HaveSuffix("@" + runImage))
		newRun, newApp := splitDroplet(rebased.Status.Droplet.Registry.Image, org)
		oldRun, oldApp := splitDroplet(getBuild(ctx, space, failedPushDroplet).Status.Droplet.Registry.Image, org)
		Expect(newApp).To(Equal(oldApp))
		Expect(newRun).NotTo(Equal(oldRun))
		Eventually(dropletCurrent(ctx, failedPush)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
		Eventually(events(ctx, failedPush)).Should(ContainElement(And(HaveField("Reason", cfv1alpha1.DropletUpgradedReason),
			HaveField("Note", ContainSubstring("the latest run image of stack "+cp.Kpack().Images.Stack.ID)))))
	})

	It("keeps an app whose rebases fail on the droplet it runs, saying why", func(ctx SpecContext) {
		Eventually(dropletCurrent(ctx, unrebasable), rollout).Should(And(
			HaveField("Reason", cfv1alpha1.RebuildFailedReason),
			HaveField("Message", ContainSubstring("quota exceeded for this repository"))))
		Expect(currentDroplet(ctx, unrebasable)()).To(Equal(unrebasableDroplet))
	})

	It("rebases the droplet an app was set back to, not the newer one kpack rebases", func(ctx SpecContext) {
		Eventually(currentDroplet(ctx, setBack), rollout).ShouldNot(Equal(setBackDroplet))
		rebased := getBuild(ctx, space, setBack.Spec.CurrentDropletRef.Name)
		Expect(rebased.Status.Droplet.RunImage).To(HaveSuffix("@" + runImage))
		Expect(rebased.Labels).To(HaveKeyWithValue(cfv1alpha1.RebuildOfLabel, setBackDroplet))
		Expect(rebased.Spec.PackageRef).To(Equal(getBuild(ctx, space, setBackDroplet).Spec.PackageRef), "the app keeps the code it was set back to")
		Eventually(dropletCurrent(ctx, setBack)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
	})

	It("deploys the fix under Held without the held buildpack upgrade, and keeps that held", func(ctx SpecContext) {
		Eventually(func() string {
			return getBuild(ctx, space, currentDroplet(ctx, heldUpgrade)()).Status.Droplet.RunImage
		}, rollout).Should(HaveSuffix("@" + runImage))
		running := getBuild(ctx, space, heldUpgrade.Spec.CurrentDropletRef.Name)
		Expect(running.Status.Droplet.Buildpacks).To(Equal(heldUpgradeBuildpacks), "only the run image may change under Held")
		Expect(running.Labels).To(HaveKeyWithValue(cfv1alpha1.RebuildOfLabel, heldUpgradeDroplet))

		Eventually(dropletCurrent(ctx, heldUpgrade)).Should(HaveField("Reason", cfv1alpha1.UpgradeHeldReason))
		// kpack rebases the held droplet too, and the app then holds the rebased one.
		Eventually(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(heldUpgrade), heldUpgrade)).To(Succeed())
			return getBuild(ctx, space, heldUpgrade.Status.HeldDropletRef.Name).Status.Droplet.RunImage
		}, rollout).Should(HaveSuffix("@"+runImage), "the held droplet gets the fix too")
		held := getBuild(ctx, space, heldUpgrade.Status.HeldDropletRef.Name)
		Expect(held.Status.Droplet.Buildpacks).To(ContainElement(cfv1alpha1.BuildpackVersion{ID: buildpacks.ProcfileID, Version: badBuildpack.Version}))
	})

	It("paces the rebuilds: kpack's rebuild pods wait for cf-hnc to let them run, pushes do not", func(ctx SpecContext) {
		pods := &corev1.PodList{}
		Expect(k8s.List(ctx, pods, client.InNamespace(space), client.HasLabels{kpackv1alpha2.BuildLabel})).To(Succeed())
		var rebuilds, pushes []corev1.Pod
		for _, pod := range pods.Items {
			switch pod.Annotations[kpackv1alpha2.BuildReasonAnnotation] {
			case "STACK", "BUILDPACK":
				rebuilds = append(rebuilds, pod)
			case "CONFIG":
				pushes = append(pushes, pod)
			}
		}
		Expect(rebuilds).NotTo(BeEmpty())
		Expect(pushes).NotTo(BeEmpty())
		for _, pod := range rebuilds {
			Expect(pod.Annotations).To(HaveKey(pacedAnnotation), "rebuild pod %s", pod.Name)
		}
		for _, pod := range pushes {
			Expect(pod.Annotations).NotTo(HaveKey(pacedAnnotation), "push pod %s", pod.Name)
		}
	})

	It("withdraws the held upgrade when the operator withdraws its buildpack", func(ctx SpecContext) {
		Expect(cp.WithdrawBuildpack(ctx, badBuildpack)).To(Succeed())
		Eventually(dropletCurrent(ctx, heldUpgrade), rollout).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
		Expect(heldUpgrade.Status.HeldDropletRef).To(BeNil())
		running := getBuild(ctx, space, heldUpgrade.Spec.CurrentDropletRef.Name)
		Expect(running.Status.Droplet.Buildpacks).To(Equal(heldUpgradeBuildpacks))
		Expect(running.Status.Droplet.RunImage).To(HaveSuffix("@" + runImage))
	})
})

// pacedAnnotation is on the kpack build pods whose start cf-hnc paces.
const pacedAnnotation = cfrollout.PacedAnnotation

// Moving a default Builder to a stack with another id is a stack migration: kpack calls the
// rebuild STACK, but it is a new droplet built from source, which waits for a restage under
// Held.
var _ = Describe("A stack migration", Ordered, ContinueOnFailure, func() {
	const newStack, newStackID = "cflinuxfs5", "io.buildpacks.stacks.noble"

	BeforeAll(func(ctx SpecContext) {
		_, err := cp.AddStack(ctx, newStack, newStackID)
		Expect(err).NotTo(HaveOccurred())
	})

	It("is held until a restage under Held", func(ctx SpecContext) {
		org, space := orgWithOwnBuilder(ctx, "held-", cfv1alpha1.HeldUpgrades)
		app := deployedApp(ctx, org, space)
		droplet := app.Spec.CurrentDropletRef.Name

		moveOrgBuilder(ctx, org, newStack)
		Eventually(dropletCurrent(ctx, app), rollout).Should(HaveField("Reason", cfv1alpha1.UpgradeHeldReason))
		Expect(currentDroplet(ctx, app)()).To(Equal(droplet))
		held := getBuild(ctx, space, app.Status.HeldDropletRef.Name)
		Expect(held.Status.Droplet.Stack).To(Equal(newStackID))
		Expect(held.Annotations).To(HaveKeyWithValue(cfv1alpha1.RebuildReasonAnnotation, "STACK"), "kpack calls any run-image change STACK")
		Consistently(currentDroplet(ctx, app), "3s").Should(Equal(droplet))

		By("running the held droplet (cf set-droplet): the app runs on the new stack")
		update(ctx, app, func() { app.Spec.CurrentDropletRef.Name = held.Name })
		Eventually(dropletCurrent(ctx, app)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
	})

	It("is deployed under Automatic", func(ctx SpecContext) {
		org, space := orgWithOwnBuilder(ctx, "automatic-", cfv1alpha1.AutomaticUpgrades)
		app := deployedApp(ctx, org, space)
		droplet := app.Spec.CurrentDropletRef.Name

		moveOrgBuilder(ctx, org, newStack)
		Eventually(currentDroplet(ctx, app), rollout).ShouldNot(Equal(droplet))
		Expect(getBuild(ctx, space, app.Spec.CurrentDropletRef.Name).Status.Droplet.Stack).To(Equal(newStackID))
		Eventually(dropletCurrent(ctx, app)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
	})

	It("leaves an app whose rebuild on the new stack failed saying that its stack gets no fixes, and what to do", func(ctx SpecContext) {
		org, space := orgWithOwnBuilder(ctx, "stranded-", cfv1alpha1.HeldUpgrades)
		app := deployedApp(ctx, org, space)
		droplet := app.Spec.CurrentDropletRef.Name
		// The registry refuses the droplet that the build on the new stack makes.
		DeferCleanup(cp.Kpack().Registry.RefusePushes(org+"/"+space+"/"+app.Name, "the repository is read-only"))

		moveOrgBuilder(ctx, org, newStack)
		Eventually(dropletCurrent(ctx, app), rollout).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", cfv1alpha1.NoRunImageReason),
			HaveField("Message", And(ContainSubstring(newStackID), ContainSubstring("restage")))))
		Expect(currentDroplet(ctx, app)()).To(Equal(droplet))
	})
})

// orgWithOwnBuilder is an org with the given upgrade policy, its registry, and its own default
// Builder on the seeded stack (so that moving it touches no other org), with a space that can
// build.
func orgWithOwnBuilder(ctx SpecContext, prefix string, policy cfv1alpha1.BuildpackUpgradePolicy) (org, space string) {
	org = createOrg(ctx, prefix+string(uuid.NewUUID())[:8])
	setUpgradePolicy(ctx, org, policy)
	placeOrgRegistry(ctx, org)
	builder := cp.Kpack().Builder(org, orgBuilder, "cf-build-org", cp.Kpack().Registry.Host()+"/"+org+"/builders/org")
	builder.Labels = buildConfig
	Expect(k8s.Create(ctx, builder)).To(Succeed())
	space = createSpace(ctx, org, "prod")
	Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
	s := &cfv1alpha1.CFSpace{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, s)).To(Succeed())
	Expect(s.Status.Build.Builder.From).To(Equal(org))
	return org, space
}

const orgBuilder = "org-builder"

// moveOrgBuilder points an org's default Builder at another ClusterStack, as an operator
// migrating the org to a new stack does.
func moveOrgBuilder(ctx context.Context, org, stack string) {
	builder := &kpackv1alpha2.Builder{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: orgBuilder}}
	update(ctx, builder, func() { builder.Spec.Stack = corev1.ObjectReference{Kind: kpackv1alpha2.ClusterStackKind, Name: stack} })
}
