package cftest

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/buildconfig"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// Jammy is the stack id of the builds of a BuildSpace.
const Jammy = "io.buildpacks.stacks.jammy"

// BuildSpace is a space that can build, against an apiserver that runs neither HNC nor kpack:
// the namespaces of the root, an org and the space as HNC labels them, the CFOrg and the
// CFSpace with the build configuration that cf-hnc resolves for it (BuildReady), the org's
// registry Secret in the space, the default Builder placed in the root and the ClusterBuilder
// made of it, both as kpack reports them Ready.
type BuildSpace struct {
	Root, Org, Space string
	// ClusterBuilder is the name of the ClusterBuilder the space's builds use.
	ClusterBuilder string
	// Repository is the space's droplet repository.
	Repository string
}

// NewBuildSpace names the objects of a BuildSpace under root.
func NewBuildSpace(root string) BuildSpace {
	return BuildSpace{
		Root:           root,
		Org:            "6c0e3f5a-0000-4000-8000-0000000000a1",
		Space:          "9d1b7c20-0000-4000-8000-0000000000b1",
		ClusterBuilder: root + ".default",
		Repository:     "registry.local/org-1/space-1",
	}
}

// TreeLabels are the labels of a namespace at depth in the tree below root, as HNC sets them.
func TreeLabels(root, depth string) map[string]string {
	return map[string]string{root + hncv1alpha2.LabelTreeDepthSuffix: depth}
}

// Create makes the space, and its ClusterBuilder Ready on run image runImage.
func (w BuildSpace) Create(ctx context.Context, c client.Client, runImage string) {
	GinkgoHelper()
	withLabels := func(l map[string]string, more map[string]string) map[string]string {
		for k, v := range more {
			l[k] = v
		}
		return l
	}
	builder := DefaultBuilder()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.Root, Labels: TreeLabels(w.Root, "0")}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.Org, Labels: withLabels(TreeLabels(w.Root, "1"), map[string]string{cfv1alpha1.OrgGUIDLabel: w.Org})}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.Space,
			Labels: withLabels(TreeLabels(w.Root, "2"), map[string]string{cfv1alpha1.OrgGUIDLabel: w.Org, cfv1alpha1.SpaceGUIDLabel: w.Space})}},
		&cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: w.Root, Name: w.Org}, Spec: cfv1alpha1.CFOrgSpec{DisplayName: "org"}},
		&cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Namespace: w.Org, Name: w.Space}, Spec: cfv1alpha1.CFSpaceSpec{DisplayName: "space"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.Space, Name: "cf-registry-org"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}},
		ReadyBuilder(&kpackv1alpha2.Builder{ObjectMeta: metav1.ObjectMeta{Namespace: w.Root, Name: "default"}, Spec: builder.Spec}),
		&kpackv1alpha2.ClusterBuilder{ObjectMeta: metav1.ObjectMeta{Name: w.ClusterBuilder}, Spec: kpackv1alpha2.ClusterBuilderSpec{BuilderSpec: builder.Spec.BuilderSpec}},
	} {
		Expect(c.Create(ctx, obj)).To(Succeed())
	}
	s := &cfv1alpha1.CFSpace{}
	Expect(c.Get(ctx, client.ObjectKey{Namespace: w.Org, Name: w.Space}, s)).To(Succeed())
	s.Status.Conditions = []metav1.Condition{{Type: cfv1alpha1.BuildReadyCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.BuildConfigCompleteReason, LastTransitionTime: metav1.Now()}}
	s.Status.Build = &cfv1alpha1.SpaceBuildConfig{
		DropletRepositoryPrefix: w.Repository,
		ServiceAccount:          &cfv1alpha1.PlacedObject{Name: "cf-build-org", From: w.Org},
		RegistryCredentials:     []cfv1alpha1.RegistryCredential{{Registry: "registry.local", Secret: cfv1alpha1.PlacedObject{Name: "cf-registry-org", From: w.Org}}},
		Builder:                 &cfv1alpha1.PlacedBuilder{PlacedObject: cfv1alpha1.PlacedObject{Name: "default", From: w.Root}, ClusterBuilder: w.ClusterBuilder},
	}
	Expect(c.Status().Update(ctx, s)).To(Succeed())
	SetRunImage(ctx, c, w.ClusterBuilder, runImage)
}

// SetRunImage reports a ClusterBuilder Ready on the Jammy stack with runImage, as kpack does
// after the ClusterStack's run image changed; its builder image changes with it.
func SetRunImage(ctx context.Context, c client.Client, name, runImage string) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cb := &kpackv1alpha2.ClusterBuilder{}
		Expect(c.Get(ctx, client.ObjectKey{Name: name}, cb)).To(Succeed())
		cb.Status.Conditions = corev1alpha1.Conditions{{Type: corev1alpha1.ConditionReady, Status: corev1.ConditionTrue}}
		cb.Status.ObservedGeneration = cb.Generation
		cb.Status.Stack = corev1alpha1.BuildStack{ID: Jammy, RunImage: runImage}
		cb.Status.BuilderMetadata = corev1alpha1.BuildpackMetadataList{{Id: "paketo-buildpacks/nodejs", Version: "1.0.0"}, {Id: "paketo-buildpacks/nodejs", Version: "1.1.0"}}
		cb.Status.Lifecycle.Version = "0.20.0"
		cb.Status.LatestImage = BuilderImage(runImage)
		return c.Status().Update(ctx, cb)
	})).To(Succeed())
}

// BuilderImage is the builder image that SetRunImage reports for a run image.
func BuilderImage(runImage string) string {
	return "registry.local/builder@sha256:" + strings.TrimPrefix(cfv1alpha1.ImageDigest(runImage), "sha256:")
}

// SucceedKpackBuild reports a kpack Build succeeded as kpack does from the completion container.
func SucceedKpackBuild(ctx context.Context, c client.Client, kb *kpackv1alpha2.Build, image, runImage string, buildpacks corev1alpha1.BuildpackMetadataList) {
	GinkgoHelper()
	kb.Status.Conditions = corev1alpha1.Conditions{{Type: corev1alpha1.ConditionSucceeded, Status: corev1.ConditionTrue}}
	kb.Status.LatestImage, kb.Status.Stack = image, corev1alpha1.BuildStack{ID: Jammy, RunImage: runImage}
	kb.Status.BuildMetadata, kb.Status.LifecycleVersion = buildpacks, "0.20.0"
	Expect(c.Status().Update(ctx, kb)).To(Succeed())
}

// FailKpackBuild reports a kpack Build failed as kpack does when a step failed.
func FailKpackBuild(ctx context.Context, c client.Client, kb *kpackv1alpha2.Build, message string) {
	GinkgoHelper()
	kb.Status.Conditions = corev1alpha1.Conditions{{Type: corev1alpha1.ConditionSucceeded, Status: corev1.ConditionFalse, Message: message}}
	Expect(c.Status().Update(ctx, kb)).To(Succeed())
}

// EventsAbout lists the events about obj, for Eventually.
func EventsAbout(ctx context.Context, c client.Client, obj client.Object) func() []eventsv1.Event {
	return func() []eventsv1.Event {
		list := &eventsv1.EventList{}
		Expect(c.List(ctx, list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
		var about []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.UID == obj.GetUID() {
				about = append(about, e)
			}
		}
		return about
	}
}

// Gauge reads a gauge family from controller-runtime's registry, by the value of one label.
func Gauge(family, label string) map[string]float64 {
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

// StartManager starts a manager against config with cf-hnc's scheme, no servers, and a cache
// that holds, as the shipped one does, only the namespaces of the tree below root and the pods
// that pods selects; setup registers what it runs. The manager stops after the suite.
func StartManager(config *rest.Config, root string, pods labels.Selector, setup func(ctrl.Manager) error) {
	GinkgoHelper()
	inTree, err := buildconfig.TreeSelector(root)
	Expect(err).NotTo(HaveOccurred())
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                 cfscheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:       {Label: pods},
			&corev1.Namespace{}: {Label: inTree},
		}},
		Logger: GinkgoLogr,
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(setup(mgr)).To(Succeed())
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	DeferCleanup(func() {
		stop()
		Eventually(done, time.Minute).Should(Receive(BeNil()))
	})
}

// CreateApp makes an app of a space in state, with the buildpack lifecycle, named name (its
// GUID is new), as cf push's manifest does.
func CreateApp(ctx context.Context, c client.Client, space, name string, state cfv1alpha1.DesiredState) *cfv1alpha1.CFApp {
	GinkgoHelper()
	app := &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFAppSpec{DisplayName: name, DesiredState: state, Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
	Expect(c.Create(ctx, app)).To(Succeed())
	return app
}

// Stage creates an uploaded package of the app, its image image, and a build of it, as cf push
// does, and returns the build.
func Stage(ctx context.Context, c client.Client, space, app, image string) *cfv1alpha1.CFBuild {
	GinkgoHelper()
	pkg := &cfv1alpha1.CFPackage{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: app},
			Source: cfv1alpha1.PackageSource{Registry: cfv1alpha1.Registry{Image: image}}}}
	Expect(c.Create(ctx, pkg)).To(Succeed())
	build := &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: app}, PackageRef: corev1.LocalObjectReference{Name: pkg.Name},
			Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
	Expect(c.Create(ctx, build)).To(Succeed())
	return build
}

// Update changes obj as a user would: on the latest version, again after a conflict with a
// controller that wrote it meanwhile. (testenv.Update does the same for the suites that run the
// whole manager; the controllers' own suites cannot import it: testenv imports them.)
func Update(ctx context.Context, c client.Client, obj client.Object, change func()) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return c.Update(ctx, obj)
	})).To(Succeed())
}
