package builders

import (
	"context"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/buildconfig"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// fakeDroplets stands in for the registry where it is beside the point: every droplet has a
// web process.
type fakeDroplets struct{}

func (fakeDroplets) ProcessTypes(context.Context, string, authn.Keychain) ([]cfv1alpha1.ProcessType, error) {
	return []cfv1alpha1.ProcessType{{Type: "web", Command: "node server.js"}}, nil
}

// The build, rebuild, app and rollout reconcilers run in a manager against a real apiserver,
// with no kpack controller: the specs create kpack's Builds and write their status as kpack
// would, and the ClusterBuilder's status as kpack reports a new run image.
var _ = Describe("the reconcilers, against the apiserver", Ordered, func() {
	const (
		root           = "cf"
		org            = "6c0e3f5a-0000-4000-8000-0000000000a1"
		space          = "9d1b7c20-0000-4000-8000-0000000000b1"
		clusterBuilder = "cf.default"
		repository     = "registry.local/org-1/space-1"
		rollout        = "rollout"
		treeDepth      = root + hncv1alpha2.LabelTreeDepthSuffix
	)
	var (
		k8s client.Client
		// buildReconciler is the build reconciler that the manager runs, for its map of events.
		buildReconciler *BuildReconciler
	)

	BeforeAll(func(ctx SpecContext) {
		SetDefaultEventuallyTimeout(20 * time.Second)
		SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
		ctrl.SetLogger(GinkgoLogr)
		cp, err := controlplane.Start(ctx, controlplane.Options{WorkDir: ".local/builders"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cp.Stop)
		k8s = cp.Client

		// As the manager caches them: only the namespaces of CF's tree, which HNC labels.
		inTree, err := buildconfig.TreeSelector(root)
		Expect(err).NotTo(HaveOccurred())
		mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
			Scheme:                 cfscheme.New(),
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
				&corev1.Pod{}:       {Label: BuildPodSelector},
				&corev1.Namespace{}: {Label: inTree},
			}},
			Logger: GinkgoLogr,
		})
		Expect(err).NotTo(HaveOccurred())
		c := mgr.GetClient()
		buildReconciler = NewBuildReconciler(c, mgr.GetAPIReader(), mgr.GetEventRecorder("cf-hnc-build"), fakeDroplets{}, 2)
		Expect(buildReconciler.SetupWithManager(mgr)).To(Succeed())
		Expect(NewRebuildReconciler(c, mgr.GetEventRecorder("cf-hnc-rebuild")).SetupWithManager(mgr)).To(Succeed())
		Expect(NewAppReconciler(c, mgr.GetEventRecorder("cf-hnc-app"), root).SetupWithManager(mgr)).To(Succeed())
		Expect(NewRolloutReconciler(c, 1).SetupWithManager(mgr)).To(Succeed())
		mgrCtx, stop := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- mgr.Start(mgrCtx) }()
		DeferCleanup(func() { stop(); Expect(<-done).To(Succeed()) })

		for _, obj := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: root, Labels: map[string]string{treeDepth: "0"}}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: org, Labels: map[string]string{treeDepth: "1", cfv1alpha1.OrgGUIDLabel: org}}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: space,
				Labels: map[string]string{treeDepth: "2", cfv1alpha1.OrgGUIDLabel: org, cfv1alpha1.SpaceGUIDLabel: space}}},
			// In CF's tree: the rollout paces only the pods there.
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rollout, Labels: map[string]string{treeDepth: "1"}}},
			&cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: org}, Spec: cfv1alpha1.CFOrgSpec{DisplayName: "org"}},
			&cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: space}, Spec: cfv1alpha1.CFSpaceSpec{DisplayName: "space"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "cf-registry-org"}, Type: corev1.SecretTypeDockerConfigJson,
				Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}},
			readyBuilder(&kpackv1alpha2.Builder{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: "default"}, Spec: defaultBuilder.Spec}),
			&kpackv1alpha2.ClusterBuilder{ObjectMeta: metav1.ObjectMeta{Name: clusterBuilder}, Spec: kpackv1alpha2.ClusterBuilderSpec{BuilderSpec: defaultBuilder.Spec.BuilderSpec}},
		} {
			Expect(k8s.Create(ctx, obj)).To(Succeed())
		}
		s := &cfv1alpha1.CFSpace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: org, Name: space}, s)).To(Succeed())
		s.Status.Conditions = []metav1.Condition{{Type: cfv1alpha1.BuildReadyCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.BuildConfigCompleteReason, LastTransitionTime: metav1.Now()}}
		s.Status.Build = &cfv1alpha1.SpaceBuildConfig{
			DropletRepositoryPrefix: repository,
			ServiceAccount:          &cfv1alpha1.PlacedObject{Name: "cf-build-org", From: org},
			RegistryCredentials:     []cfv1alpha1.RegistryCredential{{Registry: "registry.local", Secret: cfv1alpha1.PlacedObject{Name: "cf-registry-org", From: org}}},
			Builder:                 &cfv1alpha1.PlacedBuilder{PlacedObject: cfv1alpha1.PlacedObject{Name: "default", From: root}, ClusterBuilder: clusterBuilder},
		}
		Expect(k8s.Status().Update(ctx, s)).To(Succeed())
		setRunImage(ctx, k8s, clusterBuilder, r1)
	}, NodeTimeout(2*time.Minute))

	// stage creates a package and a build of the app, as `cf push` does.
	stage := func(ctx SpecContext, app string) *cfv1alpha1.CFBuild {
		pkg := &cfv1alpha1.CFPackage{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: app},
				Source: cfv1alpha1.PackageSource{Registry: cfv1alpha1.Registry{Image: repository + "/packages/" + app}}}}
		Expect(k8s.Create(ctx, pkg)).To(Succeed())
		build := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: app}, PackageRef: corev1.LocalObjectReference{Name: pkg.Name},
				Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
		Expect(k8s.Create(ctx, build)).To(Succeed())
		return build
	}
	createApp := func(ctx SpecContext) *cfv1alpha1.CFApp {
		app := &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFAppSpec{DisplayName: "app", DesiredState: cfv1alpha1.StartedState, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
		Expect(k8s.Create(ctx, app)).To(Succeed())
		return app
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
		defaults := DefaultBuildLimits()
		Expect(image.Spec.Build.BuildTimeout).To(HaveValue(BeEquivalentTo(defaults.Timeout/time.Second)), "kpack's pod deadline, in seconds")
		Expect(image.Spec.Build.Resources.Limits.Memory().Cmp(defaults.Memory)).To(BeZero())
		Expect(image.Spec.Build.Resources.Limits.StorageEphemeral().Cmp(defaults.Disk)).To(BeZero())

		kb := kpackBuilds(ctx, app.Name, "1", "CONFIG", first.Name, nil, r1)
		succeed(ctx, k8s, kb, firstImage, r1, nodejsDroplet)
		Eventually(cfBuild(ctx, first.Name)).Should(HaveField("Status.Droplet", Equal(&cfv1alpha1.BuildDropletStatus{
			Registry:         cfv1alpha1.Registry{Image: firstImage, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "cf-registry-org"}}},
			Stack:            jammy,
			RunImage:         r1,
			Buildpacks:       []cfv1alpha1.BuildpackVersion{nodejs10},
			LifecycleVersion: "0.20.0",
			ProcessTypes:     []cfv1alpha1.ProcessType{{Type: "web", Command: "node server.js"}},
		})))
		Expect(cfBuild(ctx, first.Name)().Status.Rebuild).To(BeNil(), "a push is no rebuild")

		testenvUpdate(ctx, k8s, app, func() { app.Spec.CurrentDropletRef.Name = first.Name })
		Eventually(dropletCurrent(ctx, app)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
		Expect(getApp(ctx, app)().Status.Droplet).To(Equal(&cfv1alpha1.AppDropletStatus{Stack: jammy, RunImage: r1, LatestRunImage: r1, BuilderStack: jammy}))
	})

	It("waits for kpack's rebase of the running droplet, records what it rebased, and deploys it", func(ctx SpecContext) {
		setRunImage(ctx, k8s, clusterBuilder, r2)
		Eventually(dropletCurrent(ctx, app)).Should(And(HaveField("Reason", cfv1alpha1.RebuildingReason), HaveField("Message", ContainSubstring("waiting for kpack"))))

		kb := kpackBuilds(ctx, app.Name, "2", "STACK", first.Name, &kpackv1alpha2.LastBuild{Image: firstImage, StackId: jammy}, r2)
		rebasedByKpack = kb.Name
		Eventually(cfBuild(ctx, kb.Name)).Should(And(
			HaveField("Labels", HaveKeyWithValue(cfv1alpha1.RebuildOfLabel, first.Name)),
			HaveField("Status.Rebuild", Equal(&cfv1alpha1.RebuildStatus{Image: firstImage, RunImage: r2}))))
		succeed(ctx, k8s, kb, kpackRebase, r2, nodejsDroplet)

		Eventually(func() string { return getApp(ctx, app)().Spec.CurrentDropletRef.Name }).Should(Equal(kb.Name))
		Eventually(dropletCurrent(ctx, app)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
		Eventually(eventsAbout(ctx, k8s, app)).Should(ContainElement(And(HaveField("Reason", cfv1alpha1.DropletUpgradedReason),
			HaveField("Note", ContainSubstring("latest run image of stack "+jammy)))))
	})

	It("rebases the running droplet itself when the app's latest push failed, as kpack does not", func(ctx SpecContext) {
		push := stage(ctx, app.Name)
		failing := kpackBuilds(ctx, app.Name, "3", "CONFIG", push.Name, &kpackv1alpha2.LastBuild{Image: kpackRebase, StackId: jammy}, r2)
		fail(ctx, k8s, failing, "go build: syntax error")
		Eventually(cfBuild(ctx, push.Name)).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", cfv1alpha1.SucceededCondition), HaveField("Status", metav1.ConditionFalse)))))

		setRunImage(ctx, k8s, clusterBuilder, r3)
		rebasedByCFHNC = rebaseName(app.Name, kpackRebase, r3)
		own := &kpackv1alpha2.Build{}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: rebasedByCFHNC}, own) }).Should(Succeed())
		Expect(own.Labels).To(And(HaveKeyWithValue(RebaseOfLabel, rebasedByKpack), HaveKeyWithValue(cfv1alpha1.AppLabel, app.Name), Not(HaveKey(kpackv1alpha2.ImageLabel))),
			"without kpack's Image label: kpack's Image must not take it for one of its builds")
		Expect(own.Annotations).To(HaveKeyWithValue(kpackv1alpha2.BuildReasonAnnotation, "STACK"))
		Expect(own.OwnerReferences).To(ConsistOf(HaveField("UID", app.UID)))
		Expect(own.Spec.LastBuild).To(Equal(&kpackv1alpha2.LastBuild{Image: kpackRebase, StackId: jammy}))
		Expect(own.Spec.RunImage.Image).To(Equal(r3))
		Expect(own.Spec.Builder.Image).To(Equal("registry.local/builder@sha256:" + digestOf(r3)[7:]))
		Expect(own.Spec.Tags).To(Equal([]string{repository + "/" + app.Name}))
		Expect(own.Spec.Source.Registry.Image).To(Equal(repository+"/packages/"+app.Name), "the droplet's package")
		Eventually(dropletCurrent(ctx, app)).Should(HaveField("Reason", cfv1alpha1.RebuildingReason))
		Expect(getApp(ctx, app)().Status.Droplet.Rebuild).To(Equal(&corev1.LocalObjectReference{Name: rebasedByCFHNC}))

		Eventually(cfBuild(ctx, rebasedByCFHNC)).Should(HaveField("Labels", HaveKeyWithValue(cfv1alpha1.RebuildOfLabel, first.Name)), "a CFBuild like any rebuild's")
		succeed(ctx, k8s, own, cfHNCRebase, r3, nodejsDroplet)
		Eventually(func() string { return getApp(ctx, app)().Spec.CurrentDropletRef.Name }).Should(Equal(rebasedByCFHNC))
		Eventually(dropletCurrent(ctx, app)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))
		Expect(eventsAbout(ctx, k8s, app)()).To(ContainElement(HaveField("Reason", cfv1alpha1.RebaseStartedReason)))
	})

	It("says RebuildFailed, with how to try again, when its own rebase fails, and keeps the droplet", func(ctx SpecContext) {
		setRunImage(ctx, k8s, clusterBuilder, r4)
		name := rebaseName(app.Name, cfHNCRebase, r4)
		own := &kpackv1alpha2.Build{}
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: name}, own) }).Should(Succeed())
		fail(ctx, k8s, own, "rebase: could not access run image")

		Eventually(dropletCurrent(ctx, app)).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", cfv1alpha1.RebuildFailedReason),
			HaveField("Message", And(ContainSubstring("could not access run image"), ContainSubstring("delete kpack Build "+name)))))
		Consistently(func() string { return getApp(ctx, app)().Spec.CurrentDropletRef.Name }, "1s").Should(Equal(rebasedByCFHNC))
	})

	It("holds a buildpack upgrade under Held, and deploys it when the org turns Automatic", func(ctx SpecContext) {
		other := createApp(ctx)
		push := stage(ctx, other.Name)
		succeed(ctx, k8s, kpackBuilds(ctx, other.Name, "1", "CONFIG", push.Name, nil, r4), "registry.local/org-1/space-1/other@sha256:o1", r4, nodejsDroplet)
		Eventually(cfBuild(ctx, push.Name)).Should(HaveField("Status.Droplet", Not(BeNil())))
		testenvUpdate(ctx, k8s, other, func() { other.Spec.CurrentDropletRef.Name = push.Name })

		upgrade := kpackBuilds(ctx, other.Name, "2", "BUILDPACK", push.Name, &kpackv1alpha2.LastBuild{Image: "registry.local/org-1/space-1/other@sha256:o1", StackId: jammy}, r4)
		succeed(ctx, k8s, upgrade, "registry.local/org-1/space-1/other@sha256:o2", r4, upgradedDroplet)
		Eventually(dropletCurrent(ctx, other)).Should(And(HaveField("Reason", cfv1alpha1.UpgradeHeldReason),
			HaveField("Message", ContainSubstring("paketo-buildpacks/nodejs 1.0.0] → [paketo-buildpacks/nodejs 1.1.0]"))))
		Expect(getApp(ctx, other)().Status.HeldDropletRef).To(Equal(&corev1.LocalObjectReference{Name: upgrade.Name}))
		Expect(other.Spec.CurrentDropletRef.Name).To(Equal(push.Name))

		o := &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: org}}
		testenvUpdate(ctx, k8s, o, func() { o.Spec.BuildpackUpgradePolicy = cfv1alpha1.AutomaticUpgrades })
		Eventually(func() string { return getApp(ctx, other)().Spec.CurrentDropletRef.Name }).Should(Equal(upgrade.Name))
		testenvUpdate(ctx, k8s, o, func() { o.Spec.BuildpackUpgradePolicy = cfv1alpha1.HeldUpgrades })
	})

	It("counts apps by DropletCurrent reason and run-image state on the metrics registry", func() {
		Eventually(func() map[string]float64 { return gauge("cf_hnc_apps", "reason") }).Should(And(
			HaveKeyWithValue(cfv1alpha1.RebuildFailedReason, 1.0), HaveKeyWithValue(cfv1alpha1.UpToDateReason, 1.0)))
		Eventually(func() map[string]float64 { return gauge("cf_hnc_app_run_images", "state") }).Should(And(
			HaveKeyWithValue("outdated", 1.0), HaveKeyWithValue("latest", 1.0)))
	})

	It("lets one paced rebuild pod run at a time, stack fixes first, the next when one finishes", func(ctx SpecContext) {
		pod := func(name, reason string) *corev1.Pod {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: rollout, Name: name,
					Labels:      map[string]string{kpackv1alpha2.BuildLabel: name},
					Annotations: map[string]string{kpackv1alpha2.BuildReasonAnnotation: reason},
					// As kpack makes it: its Build controls it.
					OwnerReferences: []metav1.OwnerReference{{APIVersion: kpackv1alpha2.SchemeGroupVersion.String(), Kind: kpackv1alpha2.BuildKind,
						Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "completion", Image: "kpack/completion"}}},
			}
			Expect(gate(p)).To(BeTrue())
			Expect(k8s.Create(ctx, p)).To(Succeed())
			return p
		}
		ungated := func() []string {
			list := &corev1.PodList{}
			Expect(k8s.List(ctx, list, client.InNamespace(rollout))).To(Succeed())
			var names []string
			for _, p := range list.Items {
				if !gated(&p) && !podDone(&p) {
					names = append(names, p.Name)
				}
			}
			return names
		}
		finish := func(p *corev1.Pod) {
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
				p.Status.Phase = corev1.PodSucceeded
				return k8s.Status().Update(ctx, p)
			})).To(Succeed())
		}

		first := pod("upgrade-1", "BUILDPACK")
		Eventually(ungated).Should(Equal([]string{"upgrade-1"}))
		later := pod("upgrade-2", "LIFECYCLE,BUILDPACK")
		fix := pod("fix", "STACK")
		Consistently(ungated, "1s").Should(Equal([]string{"upgrade-1"}), "one at a time")
		Eventually(func() map[string]float64 { return gauge("cf_hnc_rebuild_pods", "state") }).Should(Equal(map[string]float64{"waiting": 2, "running": 1}))

		finish(first)
		Eventually(ungated).Should(Equal([]string{"fix"}), "the stack fix first, though it came last")
		finish(fix)
		Eventually(ungated).Should(Equal([]string{"upgrade-2"}))
		finish(later)
		Eventually(func() map[string]float64 { return gauge("cf_hnc_rebuild_pods", "state") }).Should(Equal(map[string]float64{"waiting": 0, "running": 0}))
	})

	It("files kpack's rebase under the droplet the app runs when a restage staged the same image, and deploys it from either", func(ctx SpecContext) {
		restaged := createApp(ctx)
		same := "registry.local/org-1/space-1/restaged@sha256:s1"
		first := stage(ctx, restaged.Name)
		succeed(ctx, k8s, kpackBuilds(ctx, restaged.Name, "1", "CONFIG", first.Name, nil, r4), same, r4, nodejsDroplet)
		Eventually(cfBuild(ctx, first.Name)).Should(HaveField("Status.Droplet", Not(BeNil())))
		again := stage(ctx, restaged.Name) // nothing changed: the same image
		succeed(ctx, k8s, kpackBuilds(ctx, restaged.Name, "2", "CONFIG", again.Name, &kpackv1alpha2.LastBuild{Image: same, StackId: jammy}, r4), same, r4, nodejsDroplet)
		Eventually(cfBuild(ctx, again.Name)).Should(HaveField("Status.Droplet", Not(BeNil())))
		testenvUpdate(ctx, k8s, restaged, func() { restaged.Spec.CurrentDropletRef.Name = again.Name })
		Eventually(dropletCurrent(ctx, restaged)).Should(HaveField("Reason", cfv1alpha1.UpToDateReason))

		setRunImage(ctx, k8s, clusterBuilder, r5)
		rebase := kpackBuilds(ctx, restaged.Name, "3", "STACK", again.Name, &kpackv1alpha2.LastBuild{Image: same, StackId: jammy}, r5)
		Eventually(cfBuild(ctx, rebase.Name)).Should(HaveField("Labels", HaveKeyWithValue(cfv1alpha1.RebuildOfLabel, again.Name)), "the droplet the app runs")
		succeed(ctx, k8s, rebase, "registry.local/org-1/space-1/restaged@sha256:s2", r5, nodejsDroplet)
		Eventually(func() string { return getApp(ctx, restaged)().Spec.CurrentDropletRef.Name }).Should(Equal(rebase.Name))

		testenvUpdate(ctx, k8s, restaged, func() { restaged.Spec.CurrentDropletRef.Name = first.Name })
		Eventually(func() string { return getApp(ctx, restaged)().Spec.CurrentDropletRef.Name }).Should(Equal(rebase.Name),
			"the rebase of the same image counts for the first build's droplet too")
	})

	It("takes no droplet from a CFBuild marked as a rebuild of another app's kpack Build, and moves no app to it", func(ctx SpecContext) {
		victim := createApp(ctx)
		push := stage(ctx, victim.Name)
		succeed(ctx, k8s, kpackBuilds(ctx, victim.Name, "1", "CONFIG", push.Name, nil, r5), "registry.local/org-1/space-1/victim@sha256:v1", r5, nodejsDroplet)
		Eventually(cfBuild(ctx, push.Name)).Should(HaveField("Status.Droplet", Not(BeNil())))
		testenvUpdate(ctx, k8s, victim, func() { victim.Spec.CurrentDropletRef.Name = push.Name })
		other := createApp(ctx)
		otherPush := stage(ctx, other.Name)
		succeed(ctx, k8s, kpackBuilds(ctx, other.Name, "1", "CONFIG", otherPush.Name, nil, r5), "registry.local/org-1/space-1/other@sha256:o1", r5, nodejsDroplet)
		Eventually(cfBuild(ctx, otherPush.Name)).Should(HaveField("Status.Droplet", Not(BeNil())))
		upgraded := kpackBuilds(ctx, other.Name, "2", "BUILDPACK", otherPush.Name,
			&kpackv1alpha2.LastBuild{Image: "registry.local/org-1/space-1/other@sha256:o1", StackId: jammy}, r5)
		succeed(ctx, k8s, upgraded, "registry.local/org-1/space-1/other@sha256:o2", r5, upgradedDroplet)
		Eventually(cfBuild(ctx, upgraded.Name)).Should(HaveField("Status.Droplet", Not(BeNil())), "the other app's rebuild")
		o := &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: org}}
		testenvUpdate(ctx, k8s, o, func() { o.Spec.BuildpackUpgradePolicy = cfv1alpha1.AutomaticUpgrades })
		DeferCleanup(func(ctx SpecContext) {
			testenvUpdate(ctx, k8s, o, func() { o.Spec.BuildpackUpgradePolicy = cfv1alpha1.HeldUpgrades })
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

	It("checks a lifecycle's buildpacks against the store of the space's default Builder where it was placed, not against every ClusterStore", func(ctx SpecContext) {
		// The space's default Builder is placed in the root, with ClusterStore "default".
		for name, buildpack := range map[string]string{"default": "paketo-buildpacks/nodejs", "other": "paketo-buildpacks/java"} {
			store := &kpackv1alpha2.ClusterStore{ObjectMeta: metav1.ObjectMeta{Name: name}}
			Expect(k8s.Create(ctx, store)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, store)).To(Succeed()) })
			store.Status.Buildpacks = []corev1alpha1.BuildpackStatus{{BuildpackInfo: corev1alpha1.BuildpackInfo{Id: buildpack, Version: "1.0.0"}}}
			Expect(k8s.Status().Update(ctx, store)).To(Succeed())
		}
		webhook := &AppValidator{&lifecycleValidator{reader: k8s}}
		naming := func(buildpack string) *cfv1alpha1.CFApp {
			return &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
				Spec: cfv1alpha1.CFAppSpec{DisplayName: "app", Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle,
					Data: cfv1alpha1.LifecycleData{Buildpacks: []string{buildpack}}}}}
		}
		Expect(webhook.ValidateCreate(ctx, naming("paketo-buildpacks/nodejs"))).Error().NotTo(HaveOccurred())
		Expect(webhook.ValidateCreate(ctx, naming("paketo-buildpacks/java"))).Error().To(MatchError(
			ContainSubstring("unknown buildpack; the store has: paketo-buildpacks/nodejs")), "the other store's buildpack")
	})

	It("fails a build once kpack reports its dedicated Builder not Ready for the Builder's current spec, with kpack's message; not before", func(ctx SpecContext) {
		app := &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFAppSpec{DisplayName: "tiny", DesiredState: cfv1alpha1.StartedState, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle,
				Data: cfv1alpha1.LifecycleData{Stack: "tiny", Buildpacks: []string{"paketo-buildpacks/nodejs"}}}}}
		Expect(k8s.Create(ctx, app)).To(Succeed())
		build := stage(ctx, app.Name)
		dedicated := &kpackv1alpha2.Builder{}
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: dedicatedBuilderName(app.Spec.Lifecycle.Data, defaultBuilder)}, dedicated)
		}).Should(Succeed())
		succeeded := func() *metav1.Condition {
			return meta.FindStatusCondition(cfBuild(ctx, build.Name)().Status.Conditions, cfv1alpha1.SucceededCondition)
		}
		waits := And(Not(BeNil()), HaveField("Status", metav1.ConditionUnknown), HaveField("Reason", cfv1alpha1.BuilderNotReadyReason))
		Eventually(succeeded).Should(waits)

		// As kpack reports a Builder that it could never build (it keeps one that built once
		// Ready, with its last image).
		const cannot = "validating stack tiny: buildpack paketo-buildpacks/nodejs does not support stack io.buildpacks.stacks.tiny"
		notReady := func(observed int64) {
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				Expect(k8s.Get(ctx, client.ObjectKeyFromObject(dedicated), dedicated)).To(Succeed())
				dedicated.Status.ObservedGeneration = observed
				dedicated.Status.Conditions = corev1alpha1.Conditions{
					{Type: corev1alpha1.ConditionReady, Status: corev1.ConditionFalse, Reason: kpackv1alpha2.NoLatestImageReason, Message: kpackv1alpha2.NoLatestImageMessage},
					{Type: kpackv1alpha2.ConditionUpToDate, Status: corev1.ConditionFalse, Reason: kpackv1alpha2.ReconcileFailedReason, Message: cannot},
				}
				return k8s.Status().Update(ctx, dedicated)
			})).To(Succeed())
		}
		notReady(dedicated.Generation - 1)
		Consistently(succeeded, "1s").Should(waits, "a status of an earlier spec says nothing of this one")

		notReady(dedicated.Generation)
		Eventually(succeeded).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cfv1alpha1.BuilderNotReadyReason),
			HaveField("Message", And(ContainSubstring("kpack cannot make Builder %s", dedicated.Name), ContainSubstring(cannot)))))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: app.Name}, &kpackv1alpha2.Image{})).To(WithTransform(apierrors.IsNotFound, BeTrue()),
			"no Image was made for the build")
	})

	It("says so, in an event and the app's status, when another CFBuild holds the name of an app's rebuild, and makes the rebuild once it is deleted", func(ctx SpecContext) {
		setRunImage(ctx, k8s, clusterBuilder, r5) // the app's droplet is on the latest run image
		squatted := createApp(ctx)
		push := stage(ctx, squatted.Name)
		// The app's stack fixes and its kpack builds are those of its Image.
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: squatted.Name}, &kpackv1alpha2.Image{})
		}).Should(Succeed())
		image := "registry.local/org-1/space-1/squatted@sha256:q1"
		succeed(ctx, k8s, kpackBuilds(ctx, squatted.Name, "1", "CONFIG", push.Name, nil, r5), image, r5, nodejsDroplet)
		Eventually(cfBuild(ctx, push.Name)).Should(HaveField("Status.Droplet", Not(BeNil())))
		testenvUpdate(ctx, k8s, squatted, func() { squatted.Spec.CurrentDropletRef.Name = push.Name })

		// The name of kpack's next build of the app, taken first by an ordinary build.
		squatter := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: squatted.Name + "-build-2"},
			Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: squatted.Name}, PackageRef: corev1.LocalObjectReference{Name: "never"},
				Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
		Expect(k8s.Create(ctx, squatter)).To(Succeed())
		rebuild := kpackBuilds(ctx, squatted.Name, "2", "BUILDPACK", push.Name, &kpackv1alpha2.LastBuild{Image: image, StackId: jammy}, r5)
		Expect(rebuild.Name).To(Equal(squatter.Name))
		Eventually(eventsAbout(ctx, k8s, squatted)).Should(ContainElement(And(
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
		fail(ctx, k8s, rebuild, "buildpack upgrade failed")
		own := rebaseName(squatted.Name, image, r6)
		squatter = &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: own}, Spec: squatter.Spec}
		Expect(k8s.Create(ctx, squatter)).To(Succeed())
		setRunImage(ctx, k8s, clusterBuilder, r6)
		Eventually(dropletCurrent(ctx, squatted)).Should(nameTaken(own), "not Rebuilding for ever")
		Expect(k8s.Delete(ctx, squatter)).To(Succeed())
		Eventually(cfBuild(ctx, own)).Should(HaveField("Labels", And(
			HaveKeyWithValue(cfv1alpha1.KpackBuildLabel, own), HaveKeyWithValue(cfv1alpha1.RebuildOfLabel, push.Name))))
		Eventually(dropletCurrent(ctx, squatted)).Should(HaveField("Reason", cfv1alpha1.RebuildingReason))
	})

	It("maps a change only to the builds that wait for what changed, however many others wait in the namespace", func(ctx SpecContext) {
		const flood = 40
		for range flood {
			stage(ctx, string(uuid.NewUUID())) // each waits for an app that does not exist
		}
		app := createApp(ctx)
		pkg := &cfv1alpha1.CFPackage{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: app.Name}}}
		Expect(k8s.Create(ctx, pkg)).To(Succeed())
		build := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: app.Name}, PackageRef: corev1.LocalObjectReference{Name: pkg.Name},
				Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
		Expect(k8s.Create(ctx, build)).To(Succeed())
		Eventually(cfBuild(ctx, build.Name)).Should(HaveField("Status.Conditions", ContainElement(HaveField("Message", ContainSubstring("package %s is not uploaded", pkg.Name)))))

		request := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(build)}
		waiting := ConsistOf(request)
		Expect(buildReconciler.waitingBuilds(ctx, pkg)).To(waiting, "its package")
		Expect(buildReconciler.waitingBuilds(ctx, app)).To(waiting, "its app")
		Expect(buildReconciler.waitingBuilds(ctx, &kpackv1alpha2.Builder{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "cf-lifecycle-x",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: cfv1alpha1.GroupVersion.String(), Kind: "CFApp", Name: app.Name, UID: app.UID}}}})).
			To(waiting, "a dedicated Builder of its app")
		Expect(buildReconciler.waitingBuilds(ctx, &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "earlier"},
			Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: app.Name}}})).To(waiting, "another build of its app, which left the queue")
		Expect(buildReconciler.waitingBuilds(ctx, &cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: space}})).To(And(
			ContainElement(request), WithTransform(func(r []ctrl.Request) int { return len(r) }, BeNumerically(">", flood))),
			"its space, which every build of the namespace waits for")
	})

	It("queues a build behind one that joins its app's queue ahead of it, made in the same second with a smaller name", func(ctx SpecContext) {
		app := createApp(ctx)
		pkg := &cfv1alpha1.CFPackage{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: app.Name}}}
		Expect(k8s.Create(ctx, pkg)).To(Succeed())
		build := func(name string) *cfv1alpha1.CFBuild {
			b := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: name},
				Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: app.Name}, PackageRef: corev1.LocalObjectReference{Name: pkg.Name},
					Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
			Expect(k8s.Create(ctx, b)).To(Succeed())
			return b
		}
		reason := func(b *cfv1alpha1.CFBuild) func() string {
			return func() string {
				if c := meta.FindStatusCondition(cfBuild(ctx, b.Name)().Status.Conditions, cfv1alpha1.SucceededCondition); c != nil {
					return c.Reason
				}
				return ""
			}
		}
		later := build("z-" + string(uuid.NewUUID()))
		Eventually(reason(later)).Should(Equal(cfv1alpha1.WaitingReason), "alone, it heads its app's queue")
		earlier := build("a-" + string(uuid.NewUUID()))
		first, queued := earlier, later // made in the same second, the smaller name goes first
		if !earlier.CreationTimestamp.Equal(&later.CreationTimestamp) {
			first, queued = later, earlier // made in different seconds, the older goes first
		}
		Eventually(reason(queued)).Should(Equal(cfv1alpha1.QueuedReason))
		Expect(reason(first)()).To(Equal(cfv1alpha1.WaitingReason))
		// Which of the two is reconciled first is the informers' race: the one that joins
		// the queue must wake the other, whatever it decided alone.
		Expect(queueChanged.Create(event.CreateEvent{Object: earlier})).To(BeTrue(), "a build that joins the queue is news for the others of its app")
		Expect(buildReconciler.waitingBuilds(ctx, earlier)).To(ContainElement(ctrl.Request{NamespacedName: client.ObjectKeyFromObject(later)}))
	})

	It("lets a build outside CF's tree wait, saying that its namespace cannot build", func(ctx SpecContext) {
		// A namespace without the tree label: the cache does not hold it.
		elsewhere := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}
		Expect(k8s.Create(ctx, elsewhere)).To(Succeed())
		outside := &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: elsewhere.Name, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFAppSpec{DisplayName: "outside", DesiredState: cfv1alpha1.StartedState, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
		pkg := &cfv1alpha1.CFPackage{ObjectMeta: metav1.ObjectMeta{Namespace: elsewhere.Name, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: outside.Name},
				Source: cfv1alpha1.PackageSource{Registry: cfv1alpha1.Registry{Image: "registry.local/outside/packages/" + outside.Name}}}}
		build := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: elsewhere.Name, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: outside.Name}, PackageRef: corev1.LocalObjectReference{Name: pkg.Name},
				Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
		for _, obj := range []client.Object{outside, pkg, build} {
			Expect(k8s.Create(ctx, obj)).To(Succeed())
		}
		Eventually(func() *metav1.Condition {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(build), build)).To(Succeed())
			return meta.FindStatusCondition(build.Status.Conditions, cfv1alpha1.StagingCondition)
		}).Should(And(Not(BeNil()), HaveField("Reason", cfv1alpha1.WaitingReason),
			HaveField("Message", ContainSubstring("space %s cannot build", elsewhere.Name))))
	})

	It("leaves alone a kpack Build of an Image that cf-hnc did not make, or whose CFBuild was deleted", func(ctx SpecContext) {
		for _, env := range [][]corev1.EnvVar{nil, {{Name: cfv1alpha1.BuildGUIDEnv, Value: "gone"}}} {
			kb := &kpackv1alpha2.Build{
				ObjectMeta: metav1.ObjectMeta{Namespace: rollout, GenerateName: "image-build-", Labels: map[string]string{kpackv1alpha2.BuildNumberLabel: "2"}},
				Spec:       kpackv1alpha2.BuildSpec{Tags: []string{"registry.local/app"}, Env: env},
			}
			Expect(k8s.Create(ctx, kb)).To(Succeed())
			r := NewRebuildReconciler(k8s, events.NewFakeRecorder(10))
			Expect(r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(kb)})).To(Equal(ctrl.Result{}))
		}
		list := &cfv1alpha1.CFBuildList{}
		Expect(k8s.List(ctx, list, client.InNamespace(rollout))).To(Succeed())
		Expect(list.Items).To(BeEmpty())
	})
})

const (
	r3 = "registry.local/run@sha256:r3"
	r4 = "registry.local/run@sha256:r4"
	r5 = "registry.local/run@sha256:r5"
	r6 = "registry.local/run@sha256:r6"
)

// setRunImage reports a ClusterBuilder Ready on the jammy stack with runImage, as kpack does
// after the ClusterStack's run image changed; its builder image changes with it.
func setRunImage(ctx context.Context, k8s client.Client, name, runImage string) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cb := &kpackv1alpha2.ClusterBuilder{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, cb)).To(Succeed())
		cb.Status.Conditions = corev1alpha1.Conditions{{Type: corev1alpha1.ConditionReady, Status: corev1.ConditionTrue}}
		cb.Status.ObservedGeneration = cb.Generation
		cb.Status.Stack = corev1alpha1.BuildStack{ID: jammy, RunImage: runImage}
		cb.Status.BuilderMetadata = corev1alpha1.BuildpackMetadataList{{Id: "paketo-buildpacks/nodejs", Version: "1.0.0"}, {Id: "paketo-buildpacks/nodejs", Version: "1.1.0"}}
		cb.Status.Lifecycle.Version = "0.20.0"
		cb.Status.LatestImage = "registry.local/builder@sha256:" + digestOf(runImage)[7:]
		return k8s.Status().Update(ctx, cb)
	})).To(Succeed())
}

// succeed reports a kpack Build succeeded as kpack does from the completion container.
func succeed(ctx context.Context, k8s client.Client, kb *kpackv1alpha2.Build, image, runImage string, buildpacks corev1alpha1.BuildpackMetadataList) {
	GinkgoHelper()
	kb.Status.Conditions = corev1alpha1.Conditions{{Type: corev1alpha1.ConditionSucceeded, Status: corev1.ConditionTrue}}
	kb.Status.LatestImage, kb.Status.Stack = image, corev1alpha1.BuildStack{ID: jammy, RunImage: runImage}
	kb.Status.BuildMetadata, kb.Status.LifecycleVersion = buildpacks, "0.20.0"
	Expect(k8s.Status().Update(ctx, kb)).To(Succeed())
}

// fail reports a kpack Build failed as kpack does when a step failed.
func fail(ctx context.Context, k8s client.Client, kb *kpackv1alpha2.Build, message string) {
	GinkgoHelper()
	kb.Status.Conditions = corev1alpha1.Conditions{{Type: corev1alpha1.ConditionSucceeded, Status: corev1.ConditionFalse, Message: message}}
	Expect(k8s.Status().Update(ctx, kb)).To(Succeed())
}

func testenvUpdate(ctx context.Context, k8s client.Client, obj client.Object, change func()) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return k8s.Update(ctx, obj)
	})).To(Succeed())
}

func eventsAbout(ctx context.Context, k8s client.Client, obj client.Object) func() []eventsv1.Event {
	return func() []eventsv1.Event {
		list := &eventsv1.EventList{}
		Expect(k8s.List(ctx, list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
		var about []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.UID == obj.GetUID() {
				about = append(about, e)
			}
		}
		return about
	}
}

// gauge reads a gauge family from controller-runtime's registry, by the value of one label.
func gauge(family, label string) map[string]float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	values := map[string]float64{}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.Metric {
			values[labelValue(m, label)] += m.GetGauge().GetValue()
		}
	}
	return values
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
