package staging

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/builders"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
)

// fakeDroplets stands in for the registry where it is beside the point: every droplet has a
// web process, but those whose repository says it is beyond cf-hnc's bounds, as
// RegistryDropletReader finds them (droplet_reader_test.go).
type fakeDroplets struct{}

// beyondBounds is in the repository of the droplets that fakeDroplets takes for too large.
const beyondBounds = "beyond-bounds"

func (fakeDroplets) ProcessTypes(_ context.Context, image string, _ authn.Keychain) ([]cfv1alpha1.ProcessType, error) {
	if strings.Contains(image, beyondBounds) {
		return nil, fmt.Errorf("%w: the droplet declares 10000 process types; at most 32 are allowed", ErrDropletInvalid)
	}
	return []cfv1alpha1.ProcessType{{Type: "web", Command: "node server.js"}}, nil
}

// The build reconciler runs in a manager against a real apiserver, with no kpack controller:
// the specs write the status of kpack's objects as kpack would.
var _ = Describe("the build reconciler, against the apiserver", Ordered, func() {
	const root = "cf"
	var (
		world      = cftest.NewBuildSpace(root)
		org, space = world.Org, world.Space
		k8s        client.Client
		// buildReconciler is the build reconciler that the manager runs, for its map of events.
		buildReconciler *BuildReconciler
	)

	BeforeAll(func(ctx SpecContext) {
		SetDefaultEventuallyTimeout(20 * time.Second)
		SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
		ctrl.SetLogger(GinkgoLogr)
		cp, err := controlplane.Start(ctx, controlplane.Options{WorkDir: ".local/staging"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cp.Stop)
		k8s = cp.Client
		cftest.StartManager(cp.Config, root, BuildPodSelector, func(mgr ctrl.Manager) error {
			buildReconciler = NewBuildReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("cf-hnc-build"), fakeDroplets{}, 2)
			return buildReconciler.SetupWithManager(mgr)
		})
		world.Create(ctx, k8s, "registry.local/run@sha256:r1")
	}, NodeTimeout(2*time.Minute))

	stage := func(ctx SpecContext, app string) *cfv1alpha1.CFBuild {
		return cftest.Stage(ctx, k8s, space, app, world.Repository+"/packages/"+app)
	}
	createApp := func(ctx SpecContext) *cfv1alpha1.CFApp {
		return cftest.CreateApp(ctx, k8s, space, "app", cfv1alpha1.StartedState)
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

	It("checks a lifecycle's buildpacks against the store of the space's default Builder where it was placed, not against every ClusterStore", func(ctx SpecContext) {
		// The space's default Builder is placed in the root, with ClusterStore "default".
		for name, buildpack := range map[string]string{"default": "paketo-buildpacks/nodejs", "other": "paketo-buildpacks/java"} {
			store := &kpackv1alpha2.ClusterStore{ObjectMeta: metav1.ObjectMeta{Name: name}}
			Expect(k8s.Create(ctx, store)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, store)).To(Succeed()) })
			store.Status.Buildpacks = []corev1alpha1.BuildpackStatus{{BuildpackInfo: corev1alpha1.BuildpackInfo{Id: buildpack, Version: "1.0.0"}}}
			Expect(k8s.Status().Update(ctx, store)).To(Succeed())
		}
		webhook := &AppValidator{&lifecycleValidator{reader: k8s, deadline: time.Minute}}
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
			return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: builders.DedicatedBuilderName(app.Spec.Lifecycle.Data, defaultBuilder)}, dedicated)
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

	It("fails a build whose droplet is beyond cf-hnc's bounds, and takes no droplet from it", func(ctx SpecContext) {
		app := createApp(ctx)
		build := stage(ctx, app.Name)
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: space, Name: app.Name}, &kpackv1alpha2.Image{})
		}).Should(Succeed())
		kb := &kpackv1alpha2.Build{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: app.Name + "-build-1",
			Labels: map[string]string{kpackv1alpha2.ImageLabel: app.Name, kpackv1alpha2.BuildNumberLabel: "1", cfv1alpha1.AppLabel: app.Name}},
			Spec: kpackv1alpha2.BuildSpec{Env: []corev1.EnvVar{{Name: cfv1alpha1.BuildGUIDEnv, Value: build.Name}}}}
		Expect(k8s.Create(ctx, kb)).To(Succeed())
		cftest.SucceedKpackBuild(ctx, k8s, kb, world.Repository+"/"+beyondBounds+"@sha256:d1", "registry.local/run@sha256:r1", nil)

		Eventually(func() *metav1.Condition {
			return meta.FindStatusCondition(cfBuild(ctx, build.Name)().Status.Conditions, cfv1alpha1.SucceededCondition)
		}).Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", cfv1alpha1.DropletInvalidReason),
			HaveField("Message", "kpack build "+kb.Name+" succeeded, but cf-hnc takes no droplet beyond its bounds: the droplet declares 10000 process types; at most 32 are allowed")))
		Expect(cfBuild(ctx, build.Name)().Status.Droplet).To(BeNil())
	})

	// Apps name repositories below their space's (`<space>/packages/<app>`, `<space>/<app>`):
	// a reference that is no name could climb out of it (review 3, N20).
	It("refuses references that are no names, in the apiserver itself", func(ctx SpecContext) {
		const appGUID = "a DNS label (at most 63 lowercase letters"
		const objectName = "a DNS subdomain (at most 253 lowercase letters"
		for _, bad := range []string{"a/b", "../../other", "App", "a.b", strings.Repeat("a", 64)} {
			pkg := &cfv1alpha1.CFPackage{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
				Spec: cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: bad}}}
			build := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
				Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: bad}, PackageRef: corev1.LocalObjectReference{Name: "pkg"},
					Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
			process := cfv1alpha1.NewWebProcess(&cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: "app", UID: "uid"}})
			process.Spec.AppRef.Name = bad
			for _, obj := range []client.Object{pkg, build, process} {
				Expect(k8s.Create(ctx, obj, client.DryRunAll)).To(MatchError(ContainSubstring(appGUID)), "%T with appRef %q", obj, bad)
			}
		}
		for _, bad := range []string{"a/b", "../x", "Build", "a..b"} {
			build := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
				Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: "app"}, PackageRef: corev1.LocalObjectReference{Name: bad},
					Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
			app := &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
				Spec: cfv1alpha1.CFAppSpec{DisplayName: "app", DesiredState: cfv1alpha1.StoppedState, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle},
					CurrentDropletRef: corev1.LocalObjectReference{Name: bad}}}
			for _, obj := range []client.Object{build, app} {
				Expect(k8s.Create(ctx, obj, client.DryRunAll)).To(MatchError(ContainSubstring(objectName)), "%T referring to %q", obj, bad)
			}
		}
		fine := cfv1alpha1.NewWebProcess(&cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID()), UID: "uid"}})
		Expect(k8s.Create(ctx, fine, client.DryRunAll)).To(Succeed(), "an app GUID")
		withoutDroplet := &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
			Spec: cfv1alpha1.CFAppSpec{DisplayName: "app", DesiredState: cfv1alpha1.StoppedState, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
		Expect(k8s.Create(ctx, withoutDroplet, client.DryRunAll)).To(Succeed(), "no droplet yet: a reference to nothing, which the CRD defaults to an empty name")
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

})
