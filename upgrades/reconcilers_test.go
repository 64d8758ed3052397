package upgrades

import (
	"context"
	"errors"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/staging"
)

// fakeDroplets stands in for the registry where it is beside the point: every droplet has a
// web process.
type fakeDroplets struct{}

func (fakeDroplets) ProcessTypes(context.Context, string, authn.Keychain) ([]cfv1alpha1.ProcessType, error) {
	return []cfv1alpha1.ProcessType{{Type: "web", Command: "node server.js"}}, nil
}

// The build, rebuild and droplet reconcilers run in a manager against a real apiserver, with no
// kpack controller: the specs create kpack's Builds and write their status as kpack would, and
// the ClusterBuilder's status as kpack reports a new run image.
var _ = Describe("the reconcilers, against the apiserver", Ordered, func() {
	const root = "cf"
	var (
		world          = cftest.NewBuildSpace(root)
		org, space     = world.Org, world.Space
		clusterBuilder = world.ClusterBuilder
		repository     = world.Repository
		// unrelated is a namespace of CF's tree that is no space.
		unrelated = "unrelated"
		k8s       client.Client
	)

	BeforeAll(func(ctx SpecContext) {
		SetDefaultEventuallyTimeout(20 * time.Second)
		SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
		ctrl.SetLogger(GinkgoLogr)
		cp, err := controlplane.Start(ctx, controlplane.Options{WorkDir: ".local/upgrades"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cp.Stop)
		k8s = cp.Client
		cftest.StartManager(cp.Config, root, staging.BuildPodSelector, func(mgr ctrl.Manager) error {
			c := mgr.GetClient()
			return errors.Join(
				staging.NewBuildReconciler(c, mgr.GetAPIReader(), mgr.GetEventRecorder("cf-hnc-build"), fakeDroplets{}, 2).SetupWithManager(mgr),
				NewRebuildReconciler(c, mgr.GetEventRecorder("cf-hnc-rebuild")).SetupWithManager(mgr),
				NewDropletReconciler(c, mgr.GetEventRecorder("cf-hnc-droplet"), root).SetupWithManager(mgr))
		})
		world.Create(ctx, k8s, r1)
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unrelated, Labels: cftest.TreeLabels(root, "1")}})).To(Succeed())
	}, NodeTimeout(2*time.Minute))

	// stage creates a package and a build of the app, as `cf push` does.
	stage := func(ctx SpecContext, app string) *cfv1alpha1.CFBuild {
		return cftest.Stage(ctx, k8s, space, app, repository+"/packages/"+app)
	}
	createApp := func(ctx SpecContext) *cfv1alpha1.CFApp {
		return cftest.CreateApp(ctx, k8s, space, "app", cfv1alpha1.StartedState)
	}
	// kpackBuilds creates the Build that kpack's Image reconciler creates.
	kpackBuilds := func(ctx SpecContext, app string, number, reason, stages string, last *kpackv1alpha2.LastBuild, runImage string) *kpackv1alpha2.Build {
		kb := &kpackv1alpha2.Build{
			ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: app + "-build-" + number,
				Labels:      map[string]string{kpackv1alpha2.ImageLabel: app, kpackv1alpha2.BuildNumberLabel: number, cfv1alpha1.AppLabel: app},
				Annotations: map[string]string{kpackv1alpha2.BuildReasonAnnotation: reason, kpackv1alpha2.BuilderNameAnnotation: clusterBuilder}},
			Spec: kpackv1alpha2.BuildSpec{Tags: []string{repository + "/" + app}, Env: []corev1.EnvVar{{Name: cfv1alpha1.BuildGUIDEnv, Value: stages}},
				LastBuild: last, RunImage: kpackv1alpha2.BuildSpecImage{Image: runImage}},
		}
		Expect(k8s.Create(ctx, kb)).To(Succeed())
		return kb
	}
	getApp := func(ctx SpecContext, app *cfv1alpha1.CFApp) func() *cfv1alpha1.CFApp {
		return func() *cfv1alpha1.CFApp {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
			return app
		}
	}
	dropletCurrent := func(ctx SpecContext, app *cfv1alpha1.CFApp) func() *metav1.Condition {
		return func() *metav1.Condition {
			return meta.FindStatusCondition(getApp(ctx, app)().Status.Conditions, cfv1alpha1.DropletCurrentCondition)
		}
	}
	cfBuild := func(ctx SpecContext, name string) func() *cfv1alpha1.CFBuild {
		return func() *cfv1alpha1.CFBuild {
			b := &cfv1alpha1.CFBuild{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: name}, b); err != nil {
				return nil
			}
			return b
		}
	}

	var (
		app             *cfv1alpha1.CFApp
		first           *cfv1alpha1.CFBuild
		rebasedByKpack  string
		rebasedByCFHNC  string
		firstImage      = "registry.local/org-1/space-1/app@sha256:a1"
		kpackRebase     = "registry.local/org-1/space-1/app@sha256:a2"
		cfHNCRebase     = "registry.local/org-1/space-1/app@sha256:a3"
		nodejsDroplet   = corev1alpha1.BuildpackMetadataList{{Id: "paketo-buildpacks/nodejs", Version: "1.0.0"}}
		upgradedDroplet = corev1alpha1.BuildpackMetadataList{{Id: "paketo-buildpacks/nodejs", Version: "1.1.0"}}
	)

	It("stages a build: the app's Image with the space's configuration, then the kpack Build's droplet", func(ctx SpecContext) {
		app = createApp(ctx)
		first = stage(ctx, app.Name)
		image := &kpackv1alpha2.Image{}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: app.Name}, image) }).Should(Succeed())
		Expect(image.Labels).To(HaveKeyWithValue(cfv1alpha1.AppLabel, app.Name), "kpack copies it onto every Build and pod")
		Expect(image.Spec.Tag).To(Equal(repository + "/" + app.Name))
		Expect(image.Spec.Builder).To(Equal(corev1.ObjectReference{Kind: kpackv1alpha2.ClusterBuilderKind, Name: clusterBuilder}))
		Expect(image.Spec.Build.Env).To(ContainElement(corev1.EnvVar{Name: cfv1alpha1.BuildGUIDEnv, Value: first.Name}))
		defaults := staging.DefaultBuildLimits()
		Expect(image.Spec.Build.BuildTimeout).To(HaveValue(BeEquivalentTo(defaults.Timeout/time.Second)), "kpack's pod deadline, in seconds")
		Expect(image.Spec.Build.Resources.Limits.Memory().Cmp(defaults.Memory)).To(BeZero())
		Expect(image.Spec.Build.Resources.Limits.StorageEphemeral().Cmp(defaults.Disk)).To(BeZero())

		kb := kpackBuilds(ctx, app.Name, "1", "CONFIG", first.Name, nil, r1)
		cftest.SucceedKpackBuild(ctx, k8s, kb, firstImage, r1, nodejsDroplet)
		Eventually(cfBuild(ctx, first.Name)).Should(HaveField("Status.Droplet", Equal(&cfv1alpha1.BuildDropletStatus{
			Registry:         cfv1alpha1.Registry{Image: firstImage, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "cf-registry-org"}}},
			Stack:            jammy,
			RunImage:         r1,
			Buildpacks:       []cfv1alpha1.BuildpackVersion{nodejs10},
			LifecycleVersion: "0.20.0",
			ProcessTypes:     []cfv1alpha1.ProcessType{{Type: "web", Command: "node server.js"}},
		})))
		Expect(cfBuild(ctx, first.Name)().Status.Rebuild).To(BeNil(), "a push is no rebuild")

		cftest.Update(ctx, k8s, app, func() { app.Spec.CurrentDropletRef.Name = first.Name })
		Eventually(dropletCurrent(ctx, app)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
		Expect(getApp(ctx, app)().Status.Droplet).To(Equal(&cfv1alpha1.AppDropletStatus{Stack: jammy, RunImage: r1, LatestRunImage: r1, BuilderStack: jammy}))
	})

	It("waits for kpack's rebase of the running droplet, records what it rebased, and deploys it", func(ctx SpecContext) {
		cftest.SetRunImage(ctx, k8s, clusterBuilder, r2)
		Eventually(dropletCurrent(ctx, app)).Should(And(HaveField("Reason", cfv1alpha1.RebuildingReason), HaveField("Message", ContainSubstring("waiting for kpack"))))

		kb := kpackBuilds(ctx, app.Name, "2", "STACK", first.Name, &kpackv1alpha2.LastBuild{Image: firstImage, StackId: jammy}, r2)
		rebasedByKpack = kb.Name
		Eventually(cfBuild(ctx, kb.Name)).Should(And(
			HaveField("Labels", HaveKeyWithValue(cfv1alpha1.RebuildOfLabel, first.Name)),
			HaveField("Status.Rebuild", Equal(&cfv1alpha1.RebuildStatus{Image: firstImage, RunImage: r2}))))
		cftest.SucceedKpackBuild(ctx, k8s, kb, kpackRebase, r2, nodejsDroplet)

		Eventually(func() string { return getApp(ctx, app)().Spec.CurrentDropletRef.Name }).Should(Equal(kb.Name))
		Eventually(dropletCurrent(ctx, app)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
		Eventually(cftest.EventsAbout(ctx, k8s, app)).Should(ContainElement(And(HaveField("Reason", cfv1alpha1.DropletUpgradedReason),
			HaveField("Note", ContainSubstring("latest run image of stack "+jammy)))))
	})

	It("rebases the running droplet itself when the app's latest push failed, as kpack does not", func(ctx SpecContext) {
		push := stage(ctx, app.Name)
		failing := kpackBuilds(ctx, app.Name, "3", "CONFIG", push.Name, &kpackv1alpha2.LastBuild{Image: kpackRebase, StackId: jammy}, r2)
		cftest.FailKpackBuild(ctx, k8s, failing, "go build: syntax error")
		Eventually(cfBuild(ctx, push.Name)).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", cfv1alpha1.SucceededCondition), HaveField("Status", metav1.ConditionFalse)))))

		cftest.SetRunImage(ctx, k8s, clusterBuilder, r3)
		rebasedByCFHNC = rebaseName(app.Name, kpackRebase, r3)
		own := &kpackv1alpha2.Build{}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: rebasedByCFHNC}, own) }).Should(Succeed())
		Expect(own.Labels).To(And(HaveKeyWithValue(staging.RebaseOfLabel, rebasedByKpack), HaveKeyWithValue(cfv1alpha1.AppLabel, app.Name), Not(HaveKey(kpackv1alpha2.ImageLabel))),
			"without kpack's Image label: kpack's Image must not take it for one of its builds")
		Expect(own.Annotations).To(HaveKeyWithValue(kpackv1alpha2.BuildReasonAnnotation, "STACK"))
		Expect(own.OwnerReferences).To(ConsistOf(HaveField("UID", app.UID)))
		Expect(own.Spec.LastBuild).To(Equal(&kpackv1alpha2.LastBuild{Image: kpackRebase, StackId: jammy}))
		Expect(own.Spec.RunImage.Image).To(Equal(r3))
		Expect(own.Spec.Builder.Image).To(Equal(cftest.BuilderImage(r3)))
		Expect(own.Spec.Tags).To(Equal([]string{repository + "/" + app.Name}))
		Expect(own.Spec.Source.Registry.Image).To(Equal(repository+"/packages/"+app.Name), "the droplet's package")
		Eventually(dropletCurrent(ctx, app)).Should(HaveField("Reason", cfv1alpha1.RebuildingReason))
		Expect(getApp(ctx, app)().Status.Droplet.Rebuild).To(Equal(&corev1.LocalObjectReference{Name: rebasedByCFHNC}))

		Eventually(cfBuild(ctx, rebasedByCFHNC)).Should(HaveField("Labels", HaveKeyWithValue(cfv1alpha1.RebuildOfLabel, first.Name)), "a CFBuild like any rebuild's")
		cftest.SucceedKpackBuild(ctx, k8s, own, cfHNCRebase, r3, nodejsDroplet)
		Eventually(func() string { return getApp(ctx, app)().Spec.CurrentDropletRef.Name }).Should(Equal(rebasedByCFHNC))
		Eventually(dropletCurrent(ctx, app)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
		Expect(cftest.EventsAbout(ctx, k8s, app)()).To(ContainElement(HaveField("Reason", cfv1alpha1.RebaseStartedReason)))
	})

	It("says RebuildFailed, with how to try again, when its own rebase fails, and keeps the droplet", func(ctx SpecContext) {
		cftest.SetRunImage(ctx, k8s, clusterBuilder, r4)
		name := rebaseName(app.Name, cfHNCRebase, r4)
		own := &kpackv1alpha2.Build{}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: name}, own) }).Should(Succeed())
		cftest.FailKpackBuild(ctx, k8s, own, "rebase: could not access run image")

		Eventually(dropletCurrent(ctx, app)).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", cfv1alpha1.RebuildFailedReason),
			HaveField("Message", And(ContainSubstring("could not access run image"), ContainSubstring("delete kpack Build "+name)))))
		Consistently(func() string { return getApp(ctx, app)().Spec.CurrentDropletRef.Name }, "1s").Should(Equal(rebasedByCFHNC))
	})

	It("holds a buildpack upgrade under Held, and deploys it when the org turns Automatic", func(ctx SpecContext) {
		other := createApp(ctx)
		push := stage(ctx, other.Name)
		cftest.SucceedKpackBuild(ctx, k8s, kpackBuilds(ctx, other.Name, "1", "CONFIG", push.Name, nil, r4), "registry.local/org-1/space-1/other@sha256:o1", r4, nodejsDroplet)
		Eventually(cfBuild(ctx, push.Name)).Should(HaveField("Status.Droplet", Not(BeNil())))
		cftest.Update(ctx, k8s, other, func() { other.Spec.CurrentDropletRef.Name = push.Name })

		upgrade := kpackBuilds(ctx, other.Name, "2", "BUILDPACK", push.Name, &kpackv1alpha2.LastBuild{Image: "registry.local/org-1/space-1/other@sha256:o1", StackId: jammy}, r4)
		cftest.SucceedKpackBuild(ctx, k8s, upgrade, "registry.local/org-1/space-1/other@sha256:o2", r4, upgradedDroplet)
		Eventually(dropletCurrent(ctx, other)).Should(And(HaveField("Reason", cfv1alpha1.UpgradeHeldReason),
			HaveField("Message", ContainSubstring("paketo-buildpacks/nodejs 1.0.0] → [paketo-buildpacks/nodejs 1.1.0]"))))
		Expect(getApp(ctx, other)().Status.HeldDropletRef).To(Equal(&corev1.LocalObjectReference{Name: upgrade.Name}))
		Expect(other.Spec.CurrentDropletRef.Name).To(Equal(push.Name))

		o := &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: org}}
		cftest.Update(ctx, k8s, o, func() { o.Spec.BuildpackUpgradePolicy = cfv1alpha1.AutomaticUpgrades })
		Eventually(func() string { return getApp(ctx, other)().Spec.CurrentDropletRef.Name }).Should(Equal(upgrade.Name))
		cftest.Update(ctx, k8s, o, func() { o.Spec.BuildpackUpgradePolicy = cfv1alpha1.HeldUpgrades })
	})

	It("counts apps by DropletCurrent reason and run-image state on the metrics registry", func() {
		Eventually(func() map[string]float64 { return cftest.Gauge("cf_hnc_apps", "reason") }).Should(And(
			HaveKeyWithValue(cfv1alpha1.RebuildFailedReason, 1.0), HaveKeyWithValue(cfv1alpha1.UpToDateReason, 1.0)))
		Eventually(func() map[string]float64 { return cftest.Gauge("cf_hnc_app_run_images", "state") }).Should(And(
			HaveKeyWithValue("outdated", 1.0), HaveKeyWithValue("latest", 1.0)))
	})

	It("files kpack's rebase under the droplet the app runs when a restage staged the same image, and deploys it from either", func(ctx SpecContext) {
		restaged := createApp(ctx)
		same := "registry.local/org-1/space-1/restaged@sha256:s1"
		first := stage(ctx, restaged.Name)
		cftest.SucceedKpackBuild(ctx, k8s, kpackBuilds(ctx, restaged.Name, "1", "CONFIG", first.Name, nil, r4), same, r4, nodejsDroplet)
		Eventually(cfBuild(ctx, first.Name)).Should(HaveField("Status.Droplet", Not(BeNil())))
		again := stage(ctx, restaged.Name) // nothing changed: the same image
		cftest.SucceedKpackBuild(ctx, k8s, kpackBuilds(ctx, restaged.Name, "2", "CONFIG", again.Name, &kpackv1alpha2.LastBuild{Image: same, StackId: jammy}, r4), same, r4, nodejsDroplet)
		Eventually(cfBuild(ctx, again.Name)).Should(HaveField("Status.Droplet", Not(BeNil())))
		cftest.Update(ctx, k8s, restaged, func() { restaged.Spec.CurrentDropletRef.Name = again.Name })
		Eventually(dropletCurrent(ctx, restaged)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))

		cftest.SetRunImage(ctx, k8s, clusterBuilder, r5)
		rebase := kpackBuilds(ctx, restaged.Name, "3", "STACK", again.Name, &kpackv1alpha2.LastBuild{Image: same, StackId: jammy}, r5)
		Eventually(cfBuild(ctx, rebase.Name)).Should(HaveField("Labels", HaveKeyWithValue(cfv1alpha1.RebuildOfLabel, again.Name)), "the droplet the app runs")
		cftest.SucceedKpackBuild(ctx, k8s, rebase, "registry.local/org-1/space-1/restaged@sha256:s2", r5, nodejsDroplet)
		Eventually(func() string { return getApp(ctx, restaged)().Spec.CurrentDropletRef.Name }).Should(Equal(rebase.Name))

		cftest.Update(ctx, k8s, restaged, func() { restaged.Spec.CurrentDropletRef.Name = first.Name })
		Eventually(func() string { return getApp(ctx, restaged)().Spec.CurrentDropletRef.Name }).Should(Equal(rebase.Name),
			"the rebase of the same image counts for the first build's droplet too")
	})

	It("takes no droplet from a CFBuild marked as a rebuild of another app's kpack Build, and moves no app to it", func(ctx SpecContext) {
		victim := createApp(ctx)
		push := stage(ctx, victim.Name)
		cftest.SucceedKpackBuild(ctx, k8s, kpackBuilds(ctx, victim.Name, "1", "CONFIG", push.Name, nil, r5), "registry.local/org-1/space-1/victim@sha256:v1", r5, nodejsDroplet)
		Eventually(cfBuild(ctx, push.Name)).Should(HaveField("Status.Droplet", Not(BeNil())))
		cftest.Update(ctx, k8s, victim, func() { victim.Spec.CurrentDropletRef.Name = push.Name })
		other := createApp(ctx)
		otherPush := stage(ctx, other.Name)
		cftest.SucceedKpackBuild(ctx, k8s, kpackBuilds(ctx, other.Name, "1", "CONFIG", otherPush.Name, nil, r5), "registry.local/org-1/space-1/other@sha256:o1", r5, nodejsDroplet)
		Eventually(cfBuild(ctx, otherPush.Name)).Should(HaveField("Status.Droplet", Not(BeNil())))
		upgraded := kpackBuilds(ctx, other.Name, "2", "BUILDPACK", otherPush.Name,
			&kpackv1alpha2.LastBuild{Image: "registry.local/org-1/space-1/other@sha256:o1", StackId: jammy}, r5)
		cftest.SucceedKpackBuild(ctx, k8s, upgraded, "registry.local/org-1/space-1/other@sha256:o2", r5, upgradedDroplet)
		Eventually(cfBuild(ctx, upgraded.Name)).Should(HaveField("Status.Droplet", Not(BeNil())), "the other app's rebuild")
		o := &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: org}}
		cftest.Update(ctx, k8s, o, func() { o.Spec.BuildpackUpgradePolicy = cfv1alpha1.AutomaticUpgrades })
		DeferCleanup(func(ctx SpecContext) {
			cftest.Update(ctx, k8s, o, func() { o.Spec.BuildpackUpgradePolicy = cfv1alpha1.HeldUpgrades })
		})
		Eventually(dropletCurrent(ctx, victim)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))

		// Marked as a rebuild of the victim's droplet that follows the other app's rebuild: past
		// the admission policy, by anyone who may.
		forged := &cfv1alpha1.CFBuild{
			ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID()),
				Labels: map[string]string{cfv1alpha1.RebuildOfLabel: push.Name, cfv1alpha1.KpackBuildLabel: upgraded.Name,
					cfv1alpha1.KpackBuildNumberLabel: "2"},
				Annotations: map[string]string{cfv1alpha1.RebuildReasonAnnotation: "BUILDPACK"}},
			Spec: push.Spec,
		}
		Expect(k8s.Create(ctx, forged)).To(Succeed())
		Eventually(cfBuild(ctx, forged.Name)).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", cfv1alpha1.SucceededCondition), HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", cfv1alpha1.NotARebuildReason),
			HaveField("Message", ContainSubstring("kpack build %s makes CFBuild %s of app %s", upgraded.Name, upgraded.Name, other.Name))))))
		Expect(cfBuild(ctx, forged.Name)()).To(And(HaveField("Status.Droplet", BeNil()), HaveField("Status.Rebuild", BeNil())))
		Consistently(getApp(ctx, victim), "2s").Should(And(
			HaveField("Spec.CurrentDropletRef.Name", push.Name), HaveField("Status.HeldDropletRef", BeNil())))
	})

	It("says so, in an event and the app's status, when another CFBuild holds the name of an app's rebuild, and makes the rebuild once it is deleted", func(ctx SpecContext) {
		cftest.SetRunImage(ctx, k8s, clusterBuilder, r5) // the app's droplet is on the latest run image
		squatted := createApp(ctx)
		push := stage(ctx, squatted.Name)
		// The app's stack fixes and its kpack builds are those of its Image.
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: squatted.Name}, &kpackv1alpha2.Image{})
		}).Should(Succeed())
		image := "registry.local/org-1/space-1/squatted@sha256:q1"
		cftest.SucceedKpackBuild(ctx, k8s, kpackBuilds(ctx, squatted.Name, "1", "CONFIG", push.Name, nil, r5), image, r5, nodejsDroplet)
		Eventually(cfBuild(ctx, push.Name)).Should(HaveField("Status.Droplet", Not(BeNil())))
		cftest.Update(ctx, k8s, squatted, func() { squatted.Spec.CurrentDropletRef.Name = push.Name })

		// The name of kpack's next build of the app, taken first by an ordinary build.
		squatter := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: squatted.Name + "-build-2"},
			Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: squatted.Name}, PackageRef: corev1.LocalObjectReference{Name: "never"},
				Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
		Expect(k8s.Create(ctx, squatter)).To(Succeed())
		rebuild := kpackBuilds(ctx, squatted.Name, "2", "BUILDPACK", push.Name, &kpackv1alpha2.LastBuild{Image: image, StackId: jammy}, r5)
		Expect(rebuild.Name).To(Equal(squatter.Name))
		Eventually(cftest.EventsAbout(ctx, k8s, squatted)).Should(ContainElement(And(
			HaveField("Type", corev1.EventTypeWarning), HaveField("Reason", cfv1alpha1.RebuildNameTakenReason),
			HaveField("Note", ContainSubstring("delete CFBuild %s and cf-hnc makes the rebuild", squatter.Name)))))
		Expect(cfBuild(ctx, squatter.Name)()).To(HaveField("Labels", Not(HaveKey(cfv1alpha1.KpackBuildLabel))), "cf-hnc leaves the squatter as it is")
		nameTaken := func(name string) OmegaMatcher {
			return And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cfv1alpha1.RebuildFailedReason),
				HaveField("Message", ContainSubstring("a CFBuild that cf-hnc did not make has the name %s of its rebuild; delete CFBuild %s", name, name)))
		}
		Eventually(dropletCurrent(ctx, squatted)).Should(nameTaken(squatter.Name), "the app says so, not UpToDate")

		Expect(k8s.Delete(ctx, squatter)).To(Succeed())
		Eventually(cfBuild(ctx, rebuild.Name)).Should(HaveField("Labels", And(
			HaveKeyWithValue(cfv1alpha1.KpackBuildLabel, rebuild.Name), HaveKeyWithValue(cfv1alpha1.RebuildOfLabel, push.Name))))
		Eventually(dropletCurrent(ctx, squatted)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))

		// The name of cf-hnc's own rebase of the droplet onto the next run image: kpack's
		// Image will not rebase it, its latest build having failed.
		cftest.FailKpackBuild(ctx, k8s, rebuild, "buildpack upgrade failed")
		own := rebaseName(squatted.Name, image, r6)
		squatter = &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: own}, Spec: squatter.Spec}
		Expect(k8s.Create(ctx, squatter)).To(Succeed())
		cftest.SetRunImage(ctx, k8s, clusterBuilder, r6)
		Eventually(dropletCurrent(ctx, squatted)).Should(nameTaken(own), "not Rebuilding for ever")
		Expect(k8s.Delete(ctx, squatter)).To(Succeed())
		Eventually(cfBuild(ctx, own)).Should(HaveField("Labels", And(
			HaveKeyWithValue(cfv1alpha1.KpackBuildLabel, own), HaveKeyWithValue(cfv1alpha1.RebuildOfLabel, push.Name))))
		Eventually(dropletCurrent(ctx, squatted)).Should(HaveField("Reason", cfv1alpha1.RebuildingReason))
	})

	It("leaves alone a kpack Build of an Image that cf-hnc did not make, or whose CFBuild was deleted", func(ctx SpecContext) {
		for _, env := range [][]corev1.EnvVar{nil, {{Name: cfv1alpha1.BuildGUIDEnv, Value: "gone"}}} {
			kb := &kpackv1alpha2.Build{
				ObjectMeta: metav1.ObjectMeta{Namespace: unrelated, GenerateName: "image-build-", Labels: map[string]string{kpackv1alpha2.BuildNumberLabel: "2"}},
				Spec:       kpackv1alpha2.BuildSpec{Tags: []string{"registry.local/app"}, Env: env},
			}
			Expect(k8s.Create(ctx, kb)).To(Succeed())
			r := NewRebuildReconciler(k8s, events.NewFakeRecorder(10))
			Expect(r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(kb)})).To(Equal(ctrl.Result{}))
		}
		list := &cfv1alpha1.CFBuildList{}
		Expect(k8s.List(ctx, list, client.InNamespace(unrelated))).To(Succeed())
		Expect(list.Items).To(BeEmpty())
	})
})

const (
	r3 = "registry.local/run@sha256:r3"
	r4 = "registry.local/run@sha256:r4"
	r5 = "registry.local/run@sha256:r5"
	r6 = "registry.local/run@sha256:r6"
)
