package e2e_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
)

var defaultLifecycle = cfv1alpha1.LifecycleData{}

var _ = Describe("Staging", func() {
	var org, space string

	BeforeEach(func(ctx SpecContext) {
		org = createOrg(ctx, "org-"+string(uuid.NewUUID())[:8])
		space = createSpace(ctx, org, "dev")
		placeOrgRegistry(ctx, org)
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
	})

	It("stages a push with no lifecycle with the default Builder, under the space's repository, with the space's credentials", func(ctx SpecContext) {
		app := createApp(ctx, space, defaultLifecycle)
		build := stage(ctx, org, app)
		Eventually(succeeded(ctx, build)).Should(HaveField("Status", metav1.ConditionTrue))

		Expect(build.Status.Builder).To(Equal(root + "." + controlplane.DefaultBuilder))
		droplet := build.Status.Droplet
		Expect(droplet.Registry.Image).To(HavePrefix(cp.Kpack().Registry.Host() + "/" + org + "/" + space + "/" + app.Name + "@sha256:"))
		Expect(droplet.Registry.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: "cf-registry-org"}))
		Expect(droplet.Stack).To(Equal(cp.Kpack().Images.Stack.ID))
		Expect(droplet.ProcessTypes).To(ConsistOf(cfv1alpha1.ProcessType{Type: "web", Command: "./app"}))
		pusher, ok := cp.Kpack().Registry.PushedBy(droplet.Registry.Image)
		Expect(ok).To(BeTrue())
		Expect(pusher).To(Equal(registryUserName(org)))
	})

	It("runs the first buildpack of the default Builder's order that detects, as Cloud Foundry does", func(ctx SpecContext) {
		both := map[string]string{"go.mod": "module app\n", "main.go": "package main\n", "package.json": `{"name":"app"}`, "Procfile": "web: ./app\n"}
		goFirst := stageSource(ctx, org, createApp(ctx, space, defaultLifecycle), both)
		node := stageSource(ctx, org, createApp(ctx, space, defaultLifecycle), nodeSource)
		Eventually(succeeded(ctx, goFirst)).Should(HaveField("Status", metav1.ConditionTrue))
		Eventually(succeeded(ctx, node)).Should(HaveField("Status", metav1.ConditionTrue))

		Expect(goFirst.Status.Droplet.Buildpacks).To(HaveExactElements(HaveField("ID", "paketo-buildpacks/go")),
			"Go and Node.js both detect; Go comes first in the operator's order")
		Expect(node.Status.Droplet.Buildpacks).To(HaveExactElements(HaveField("ID", "paketo-buildpacks/nodejs")))
	})

	It("gives a lifecycle with its own buildpacks a dedicated Builder that apps share and that goes with them", func(ctx SpecContext) {
		lifecycle := cfv1alpha1.LifecycleData{Buildpacks: []string{"paketo-buildpacks/nodejs", "paketo-buildpacks/procfile"}}
		first, second := createApp(ctx, space, lifecycle), createApp(ctx, space, lifecycle)
		firstBuild, secondBuild := stageSource(ctx, org, first, nodeSource), stageSource(ctx, org, second, nodeSource)
		Eventually(succeeded(ctx, firstBuild)).Should(HaveField("Status", metav1.ConditionTrue))
		Eventually(succeeded(ctx, secondBuild)).Should(HaveField("Status", metav1.ConditionTrue))

		Expect(firstBuild.Status.Builder).To(HavePrefix("cf-lifecycle-"))
		Expect(secondBuild.Status.Builder).To(Equal(firstBuild.Status.Builder))
		Expect(firstBuild.Status.Droplet.Buildpacks).To(HaveExactElements(
			HaveField("ID", "paketo-buildpacks/nodejs"), HaveField("ID", "paketo-buildpacks/procfile")))
		builder := &kpackv1alpha2.Builder{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: firstBuild.Status.Builder}, builder)).To(Succeed())
		Expect(builder.OwnerReferences).To(ConsistOf(HaveField("UID", first.UID), HaveField("UID", second.UID)))

		Expect(k8s.Delete(ctx, first)).To(Succeed())
		Consistently(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(builder), builder) }, "3s").Should(Succeed())
		Expect(k8s.Delete(ctx, second)).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(builder), builder) }).Should(BeNotFound())
	})

	It("rejects lifecycles that cannot be built, with what can", func(ctx SpecContext) {
		for lifecycle, message := range map[*cfv1alpha1.Lifecycle]string{
			{Type: "docker"}: `spec.lifecycle.type: Unsupported value: "docker": supported values: "buildpack"`,
			{Type: cfv1alpha1.BuildpackLifecycle, Data: cfv1alpha1.LifecycleData{Stack: "cflinuxfs3"}}:                                            `spec.lifecycle.data.stack: Invalid value: "cflinuxfs3": unknown stack; the stacks are: cflinuxfs4`,
			{Type: cfv1alpha1.BuildpackLifecycle, Data: cfv1alpha1.LifecycleData{Buildpacks: []string{"paketo-buildpacks/go", "ruby_buildpack"}}}: `spec.lifecycle.data.buildpacks[1]: Invalid value: "ruby_buildpack": unknown buildpack; the store has: paketo-buildpacks/go, paketo-buildpacks/java, paketo-buildpacks/nodejs, paketo-buildpacks/procfile`,
		} {
			app := newApp(space, lifecycle.Data)
			app.Spec.Lifecycle.Type = lifecycle.Type
			Expect(k8s.Create(ctx, app)).To(MatchError(ContainSubstring(message)))
		}
	})
})

var _ = Describe("Upgrades", Ordered, func() {
	var org, space string

	BeforeAll(func(ctx SpecContext) {
		org = createOrg(ctx, "upgrades-"+string(uuid.NewUUID())[:8])
		space = createSpace(ctx, org, "prod")
		placeOrgRegistry(ctx, org)
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
	})

	It("moves every app to a rebased droplet after a stack run image fix, and keeps an app whose rebuild fails where it is", func(ctx SpecContext) {
		healthy, broken := deployedApp(ctx, org, space), deployedApp(ctx, org, space)
		healthyDroplet, brokenDroplet := healthy.Spec.CurrentDropletRef.Name, broken.Spec.CurrentDropletRef.Name
		// Every rebase of the broken app fails: kpack's, and the one cf-hnc tries after it.
		restore := cp.Kubelet().FailBuildsMatching(space, labels.SelectorFromSet(labels.Set{cfv1alpha1.AppLabel: broken.Name}), "rebase failed: run image layer is corrupt")
		DeferCleanup(restore)

		runImage, err := cp.UpgradeRunImage(ctx)
		Expect(err).NotTo(HaveOccurred())

		Eventually(currentDroplet(ctx, healthy)).ShouldNot(Equal(healthyDroplet))
		rebuilt := getBuild(ctx, space, healthy.Spec.CurrentDropletRef.Name)
		Expect(rebuilt.Labels).To(HaveKeyWithValue(cfv1alpha1.RebuildOfLabel, healthyDroplet))
		Expect(rebuilt.Annotations).To(HaveKeyWithValue(cfv1alpha1.RebuildReasonAnnotation, "STACK"))
		Expect(rebuilt.Status.Droplet.RunImage).To(HaveSuffix("@" + runImage.Digest))
		Eventually(events(ctx, healthy)).Should(ContainElement(And(
			HaveField("Reason", "DropletUpgraded"), HaveField("Note", ContainSubstring("the latest run image of stack "+cp.Kpack().Images.Stack.ID)))))

		Eventually(dropletCurrent(ctx, broken)).Should(And(
			HaveField("Reason", "RebuildFailed"),
			HaveField("Message", ContainSubstring("rebase failed: run image layer is corrupt"))))
		Expect(currentDroplet(ctx, broken)()).To(Equal(brokenDroplet))
	})

	It("holds a buildpack upgrade until a restage when the org says Held, and deploys it when it says Automatic", func(ctx SpecContext) {
		automaticOrg := createOrg(ctx, "automatic-"+string(uuid.NewUUID())[:8])
		setUpgradePolicy(ctx, automaticOrg, cfv1alpha1.AutomaticUpgrades)
		automaticSpace := createSpace(ctx, automaticOrg, "prod")
		placeOrgRegistry(ctx, automaticOrg)
		Eventually(buildReady(ctx, automaticOrg, automaticSpace)).Should(HaveField("Status", metav1.ConditionTrue))

		held, later, automatic := deployedApp(ctx, org, space), deployedApp(ctx, org, space), deployedApp(ctx, automaticOrg, automaticSpace)
		heldDroplet, automaticDroplet := held.Spec.CurrentDropletRef.Name, automatic.Spec.CurrentDropletRef.Name
		_, err := cp.UpgradeBuildpack(ctx, "paketo-buildpacks/go", "1.1.0")
		Expect(err).NotTo(HaveOccurred())

		Eventually(currentDroplet(ctx, automatic)).ShouldNot(Equal(automaticDroplet))
		Expect(getBuild(ctx, automaticSpace, automatic.Spec.CurrentDropletRef.Name).Status.Droplet.Buildpacks).
			To(ContainElement(cfv1alpha1.BuildpackVersion{ID: "paketo-buildpacks/go", Version: "1.1.0"}))

		Eventually(dropletCurrent(ctx, held)).Should(HaveField("Reason", "UpgradeHeld"))
		Expect(held.Status.HeldDropletRef).NotTo(BeNil())
		Expect(currentDroplet(ctx, held)()).To(Equal(heldDroplet))
		Eventually(dropletCurrent(ctx, later)).Should(HaveField("Reason", "UpgradeHeld"))

		By("running the held droplet, as cf set-droplet does")
		restage := held.Status.HeldDropletRef.Name
		update(ctx, held, func() { held.Spec.CurrentDropletRef.Name = restage })
		Eventually(dropletCurrent(ctx, held)).Should(HaveField("Reason", "UpToDate"))
		Expect(held.Status.HeldDropletRef).To(BeNil())

		By("switching the org to Automatic: the app still held runs its held droplet")
		heldForLater := later.Status.HeldDropletRef.Name
		setUpgradePolicy(ctx, org, cfv1alpha1.AutomaticUpgrades)
		DeferCleanup(setUpgradePolicy, org, cfv1alpha1.HeldUpgrades)
		Eventually(currentDroplet(ctx, later)).Should(Equal(heldForLater))
	})

	It("loses nothing and makes no duplicate droplet when the manager restarts in the middle of an upgrade", func(ctx SpecContext) {
		app := deployedApp(ctx, org, space)
		droplet := app.Spec.CurrentDropletRef.Name
		cp.StopManager()
		DeferCleanup(func(ctx SpecContext) {
			if cp.Healthy() != nil {
				Expect(cp.StartManager(ctx)).To(Succeed())
			}
		})
		_, err := cp.UpgradeRunImage(ctx)
		Expect(err).NotTo(HaveOccurred())
		var rebuild kpackv1alpha2.Build
		Eventually(func() []kpackv1alpha2.Build {
			builds := &kpackv1alpha2.BuildList{}
			Expect(k8s.List(ctx, builds, client.InNamespace(space), client.MatchingLabels{kpackv1alpha2.ImageLabel: app.Name})).To(Succeed())
			return builds.Items
		}, 2*time.Minute).Should(ContainElement(And(
			HaveField("ObjectMeta.Annotations", HaveKeyWithValue(kpackv1alpha2.BuildReasonAnnotation, "STACK")),
			WithTransform(func(b kpackv1alpha2.Build) bool { return b.IsSuccess() }, BeTrue())), &rebuild))
		Expect(currentDroplet(ctx, app)()).To(Equal(droplet), "nothing moves while the manager is down")

		Expect(cp.StartManager(ctx)).To(Succeed())
		Eventually(currentDroplet(ctx, app)).Should(Equal(rebuild.Name))
		rebuilds := func() []cfv1alpha1.CFBuild {
			builds := &cfv1alpha1.CFBuildList{}
			Expect(k8s.List(ctx, builds, client.InNamespace(space), client.MatchingLabels{cfv1alpha1.KpackBuildLabel: rebuild.Name})).To(Succeed())
			return builds.Items
		}
		Consistently(rebuilds, "3s").Should(HaveLen(1))
	})
})

func newApp(space string, lifecycle cfv1alpha1.LifecycleData) *cfv1alpha1.CFApp {
	return &cfv1alpha1.CFApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFAppSpec{
			DisplayName:  "app",
			DesiredState: cfv1alpha1.StartedState,
			Lifecycle:    cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle, Data: lifecycle},
		},
	}
}

func createApp(ctx SpecContext, space string, lifecycle cfv1alpha1.LifecycleData) *cfv1alpha1.CFApp {
	app := newApp(space, lifecycle)
	Expect(k8s.Create(ctx, app)).To(Succeed())
	return app
}

// Sources of apps, file name to content: a Go app, and a Node.js app.
var (
	goSource   = map[string]string{"Procfile": "web: ./app\n", "main.go": "package main\n"}
	nodeSource = map[string]string{"Procfile": "web: node server.js\n", "package.json": `{"name":"app"}`, "server.js": "\n"}
)

// stage uploads a package of the app's Go source and creates a build of it, as `cf push` does.
func stage(ctx SpecContext, org string, app *cfv1alpha1.CFApp) *cfv1alpha1.CFBuild {
	return stageSource(ctx, org, app, goSource)
}

// stageSource uploads a package of source and creates a build of it, as `cf push` does.
func stageSource(ctx SpecContext, org string, app *cfv1alpha1.CFApp, source map[string]string) *cfv1alpha1.CFBuild {
	pkg := &cfv1alpha1.CFPackage{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFPackageSpec{
			Type:   cfv1alpha1.BitsPackage,
			AppRef: corev1.LocalObjectReference{Name: app.Name},
			Source: cfv1alpha1.PackageSource{Registry: cfv1alpha1.Registry{
				Image:            uploadSource(org, source),
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "cf-registry-org"}},
			}},
		},
	}
	Expect(k8s.Create(ctx, pkg)).To(Succeed())
	build := &cfv1alpha1.CFBuild{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFBuildSpec{
			AppRef:     corev1.LocalObjectReference{Name: app.Name},
			PackageRef: corev1.LocalObjectReference{Name: pkg.Name},
			Lifecycle:  cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle},
		},
	}
	Expect(k8s.Create(ctx, build)).To(Succeed())
	return build
}

// deployedApp is a Go app staged and running its droplet.
func deployedApp(ctx SpecContext, org, space string) *cfv1alpha1.CFApp {
	return deployedAppOf(ctx, org, space, goSource)
}

// deployedAppOf is an app of source staged and running its droplet.
func deployedAppOf(ctx SpecContext, org, space string, source map[string]string) *cfv1alpha1.CFApp {
	app := createApp(ctx, space, defaultLifecycle)
	build := stageSource(ctx, org, app, source)
	Eventually(succeeded(ctx, build)).Should(HaveField("Status", metav1.ConditionTrue))
	update(ctx, app, func() { app.Spec.CurrentDropletRef.Name = build.Name })
	Eventually(dropletCurrent(ctx, app)).Should(HaveField("Reason", "UpToDate"))
	return app
}

// uploadSource pushes an app's source files with the org's credentials, as the CF API does
// with uploaded bits, and returns its reference.
func uploadSource(org string, files map[string]string) string {
	user, password := registryCredentials(org)
	ref, err := cp.Kpack().Registry.PushSource(context.Background(), org+"/packages/"+string(uuid.NewUUID()), files, user, password)
	Expect(err).NotTo(HaveOccurred())
	return ref
}

func setUpgradePolicy(ctx context.Context, org string, policy cfv1alpha1.BuildpackUpgradePolicy) {
	o := &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: org}}
	update(ctx, o, func() { o.Spec.BuildpackUpgradePolicy = policy })
}

func getBuild(ctx SpecContext, namespace, name string) *cfv1alpha1.CFBuild {
	b := &cfv1alpha1.CFBuild{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, b)).To(Succeed())
	return b
}

func succeeded(ctx SpecContext, build *cfv1alpha1.CFBuild) func() *metav1.Condition {
	return func() *metav1.Condition {
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(build), build)).To(Succeed())
		return meta.FindStatusCondition(build.Status.Conditions, cfv1alpha1.SucceededCondition)
	}
}

func dropletCurrent(ctx SpecContext, app *cfv1alpha1.CFApp) func() *metav1.Condition {
	return func() *metav1.Condition {
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
		return meta.FindStatusCondition(app.Status.Conditions, cfv1alpha1.DropletCurrentCondition)
	}
}

func currentDroplet(ctx SpecContext, app *cfv1alpha1.CFApp) func() string {
	return func() string {
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
		return app.Spec.CurrentDropletRef.Name
	}
}
