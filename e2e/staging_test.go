package e2e_test

import (
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/staging"
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

	It("stages a push with no lifecycle with the default Builder, under the space's repository, with the space's credentials, in a bounded build pod without an API token", func(ctx SpecContext) {
		app := createApp(ctx, space, defaultLifecycle)
		build := stage(ctx, org, app)
		Eventually(succeeded(ctx, build)).Should(HaveField("Status", metav1.ConditionTrue))

		Expect(build.Status.Builder).To(Equal(root + "." + controlplane.DefaultBuilder))
		droplet := build.Status.Droplet
		Expect(droplet.Registry.Image).To(HavePrefix(cp.Kpack().Registry.Host() + "/" + org + "/" + space + "/" + app.Name + "@sha256:"))
		Expect(droplet.Registry.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: "cf-registry-org"}))
		Expect(droplet.Stack).To(Equal(cp.Kpack().Images.Stack.ID))
		Expect(droplet.ProcessTypes).To(ConsistOf(cfv1alpha1.ProcessType{Type: "web", Command: "staticfile-server -root ."}))
		pusher, ok := cp.Kpack().Registry.PushedBy(droplet.Registry.Image)
		Expect(ok).To(BeTrue())
		Expect(pusher).To(Equal(registryUserName(org)))

		By("reading what the lifecycle's exporter wrote into the droplet")
		metadata := lifecycleMetadata(droplet.Registry.Image, org)
		stack := &kpackv1alpha2.ClusterStack{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: controlplane.Stack}, stack)).To(Succeed())
		Expect(metadata.RunImage.Reference).To(HaveSuffix("@"+digestOf(stack.Status.RunImage.LatestImage)),
			"the exporter used the run image kpack resolved for the stack")
		Expect(metadata.Buildpacks).To(ConsistOf(HaveField("Key", buildpacks.StaticfileID)))
		runLayers, _ := splitDroplet(droplet.Registry.Image, org)
		Expect(runLayers).NotTo(BeEmpty())

		By("the build pod: no API token, the timeout, and the memory and disk limits on every step")
		kb := &kpackv1alpha2.Build{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: build.Status.KpackBuild}, kb)).To(Succeed())
		pod := &corev1.Pod{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: kb.Status.PodName}, pod)).To(Succeed())
		for _, v := range pod.Spec.Volumes {
			if v.Projected != nil {
				Expect(v.Projected.Sources).NotTo(ContainElement(HaveField("ServiceAccountToken", Not(BeNil()))),
					"volume %s: the build ServiceAccount mounts no token", v.Name)
			}
		}
		limits := staging.DefaultBuildLimits() // the manager runs with config/manager's args, which set none
		Expect(pod.Spec.ActiveDeadlineSeconds).To(HaveValue(BeEquivalentTo(limits.Timeout / time.Second)))
		steps := append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...)
		Expect(steps).To(ContainElements(HaveField("Name", kpackv1alpha2.PrepareContainerName), HaveField("Name", kpackv1alpha2.BuildContainerName),
			HaveField("Name", kpackv1alpha2.ExportContainerName), HaveField("Name", kpackv1alpha2.CompletionContainerName)))
		for _, step := range steps {
			Expect(step.Resources.Limits.Memory().Cmp(limits.Memory)).To(BeZero(), "the memory limit of step %s", step.Name)
			Expect(step.Resources.Limits.StorageEphemeral().Cmp(limits.Disk)).To(BeZero(), "the disk limit of step %s", step.Name)
		}
	})

	It("runs the first buildpack of the default Builder's order that detects, as Cloud Foundry does", func(ctx SpecContext) {
		both := stageSource(ctx, org, createApp(ctx, space, defaultLifecycle), bothSource)
		procfile := stageSource(ctx, org, createApp(ctx, space, defaultLifecycle), procfileSource)
		Eventually(succeeded(ctx, both)).Should(HaveField("Status", metav1.ConditionTrue))
		Eventually(succeeded(ctx, procfile)).Should(HaveField("Status", metav1.ConditionTrue))

		Expect(both.Status.Droplet.Buildpacks).To(HaveExactElements(HaveField("ID", buildpacks.StaticfileID)),
			"both buildpacks detect; the staticfile one comes first in the operator's order")
		Expect(procfile.Status.Droplet.Buildpacks).To(HaveExactElements(HaveField("ID", buildpacks.ProcfileID)))
		Expect(procfile.Status.Droplet.ProcessTypes).To(ConsistOf(cfv1alpha1.ProcessType{Type: "web", Command: "sh -c httpd -f -p $PORT"}))
	})

	It("fails a build whose buildpack fails, naming the step and the buildpack's message, and one that no buildpack detects", func(ctx SpecContext) {
		broken := stageSource(ctx, org, createApp(ctx, space, defaultLifecycle), brokenSource)
		undetected := stageSource(ctx, org, createApp(ctx, space, defaultLifecycle), map[string]string{"README.md": "nothing to run\n"})
		Eventually(succeeded(ctx, broken)).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Message", And(
				ContainSubstring("in step build (exit code 51)"),
				ContainSubstring(`Procfile:1: malformed line "web ./server", want "<type>: <command>"`)))))
		Eventually(succeeded(ctx, undetected)).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Message", And(ContainSubstring("in step detect"), ContainSubstring("No buildpack groups passed detection")))))
	})

	It("fails a build whose Builder's image cannot be pulled, in the registry's words, and builds again once it can", func(ctx SpecContext) {
		// A lifecycle of its own gives the app a dedicated Builder, whose image lies below the
		// space's repository. kpack reads the image's configuration before it makes a build pod.
		restore := cp.Kpack().Registry.RefusePulls(org+"/"+space+"/builders/", "the repository is quarantined")
		DeferCleanup(restore)
		app := createApp(ctx, space, cfv1alpha1.LifecycleData{Buildpacks: []string{buildpacks.ProcfileID}})
		build := stageSource(ctx, org, app, procfileSource)
		Eventually(succeeded(ctx, build), 2*time.Minute).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Message", ContainSubstring("the repository is quarantined"))))

		restore()
		again := stageSource(ctx, org, app, procfileSource)
		Eventually(succeeded(ctx, again), 3*time.Minute).Should(HaveField("Status", metav1.ConditionTrue))
		Expect(lifecycleMetadata(again.Status.Droplet.Registry.Image, org).Buildpacks).To(ConsistOf(HaveField("Key", buildpacks.ProcfileID)))
	})

	It("gives a lifecycle with its own buildpacks a dedicated Builder that apps share and that goes with them", func(ctx SpecContext) {
		lifecycle := cfv1alpha1.LifecycleData{Buildpacks: []string{buildpacks.StaticfileID, buildpacks.ProcfileID}}
		first, second := createApp(ctx, space, lifecycle), createApp(ctx, space, lifecycle)
		firstBuild, secondBuild := stageSource(ctx, org, first, bothSource), stageSource(ctx, org, second, bothSource)
		Eventually(succeeded(ctx, firstBuild)).Should(HaveField("Status", metav1.ConditionTrue))
		Eventually(succeeded(ctx, secondBuild)).Should(HaveField("Status", metav1.ConditionTrue))

		Expect(firstBuild.Status.Builder).To(HavePrefix("cf-lifecycle-"))
		Expect(secondBuild.Status.Builder).To(Equal(firstBuild.Status.Builder))
		Expect(firstBuild.Status.Droplet.Buildpacks).To(HaveExactElements(
			HaveField("ID", buildpacks.StaticfileID), HaveField("ID", buildpacks.ProcfileID)),
			"the lifecycle's group runs both buildpacks, where the default order stops at the first")
		Expect(firstBuild.Status.Droplet.ProcessTypes).To(ConsistOf(cfv1alpha1.ProcessType{Type: "web", Command: "sh -c httpd -f -p $PORT"}),
			"the later buildpack's web process wins")
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
			{Type: cfv1alpha1.BuildpackLifecycle, Data: cfv1alpha1.LifecycleData{Stack: "cflinuxfs3"}}:                                           `spec.lifecycle.data.stack: Invalid value: "cflinuxfs3": unknown stack; the stacks are: cflinuxfs4`,
			{Type: cfv1alpha1.BuildpackLifecycle, Data: cfv1alpha1.LifecycleData{Buildpacks: []string{buildpacks.ProcfileID, "ruby_buildpack"}}}: `spec.lifecycle.data.buildpacks[1]: Invalid value: "ruby_buildpack": unknown buildpack; the store has: cf-hnc/procfile, cf-hnc/staticfile`,
		} {
			app := newApp(space, lifecycle.Data)
			app.Spec.Lifecycle.Type = lifecycle.Type
			Expect(k8s.Create(ctx, app)).To(MatchError(ContainSubstring(message)))
		}
	})
})

var _ = Describe("Upgrades", func() {
	var org, space string

	BeforeEach(func(ctx SpecContext) {
		org = createOrg(ctx, "upgrades-"+string(uuid.NewUUID())[:8])
		space = createSpace(ctx, org, "prod")
		placeOrgRegistry(ctx, org)
		Eventually(buildReady(ctx, org, space)).Should(HaveField("Status", metav1.ConditionTrue))
	})

	It("loses nothing and makes no duplicate droplet when the manager restarts in the middle of an upgrade", func(ctx SpecContext) {
		app := deployedApp(ctx, org, space)
		droplet := app.Spec.CurrentDropletRef.Name
		Expect(cp.StopManager(ctx)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(cp.StartManager(ctx)).To(Succeed()) })
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

// newApp is a stopped app: only the specs of running apps start theirs, so that the others
// leave nothing running on the node.
func newApp(space string, lifecycle cfv1alpha1.LifecycleData) *cfv1alpha1.CFApp {
	return &cfv1alpha1.CFApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFAppSpec{
			DisplayName:  "app",
			DesiredState: cfv1alpha1.StoppedState,
			Lifecycle:    cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle, Data: lifecycle},
		},
	}
}

func createApp(ctx SpecContext, space string, lifecycle cfv1alpha1.LifecycleData) *cfv1alpha1.CFApp {
	app := newApp(space, lifecycle)
	Expect(k8s.Create(ctx, app)).To(Succeed())
	return app
}

// Sources of apps, file name to content, for cf-hnc's buildpacks: a static site; an app whose
// Procfile serves it with the stack's busybox httpd; one that both buildpacks detect; and one
// whose Procfile the procfile buildpack refuses.
var (
	staticSource   = map[string]string{"Staticfile": "", "index.html": "<h1>static</h1>\n"}
	procfileSource = map[string]string{"Procfile": "web: httpd -f -p $PORT\n", "index.html": "<h1>httpd</h1>\n"}
	bothSource     = map[string]string{"Staticfile": "", "Procfile": "web: httpd -f -p $PORT\n", "index.html": "<h1>both</h1>\n"}
	brokenSource   = map[string]string{"Procfile": "web ./server\n"}
)

// stage uploads a package of a static site and creates a build of it, as `cf push` does.
func stage(ctx SpecContext, org string, app *cfv1alpha1.CFApp) *cfv1alpha1.CFBuild {
	return stageSource(ctx, org, app, staticSource)
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

// deployedApp is a static site staged and running its droplet.
func deployedApp(ctx SpecContext, org, space string) *cfv1alpha1.CFApp {
	return deployedAppOf(ctx, org, space, staticSource)
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
