package manager_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/cftest"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
)

// heap is the live heap of this process, which runs the manager's cache, after a collection.
func heap() uint64 {
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats.HeapAlloc
}

// mib is bytes in MiB, for the log.
func mib(bytes uint64) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }

// treeNamespace makes a namespace that HNC placed at depth 2 below the root: a space's. No HNC
// runs in this suite: the test puts on the tree label that HNC would.
func treeNamespace(ctx context.Context) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "space-" + string(uuid.NewUUID())[:8], Labels: cftest.TreeLabels(controlplane.RootNamespace, "2")}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "default"}})).To(Succeed())
	return ns.Name
}

// appObjects are a pod, a StatefulSet, a kpack Image, Build and Builder of an app, each as large
// as the apiserver takes it (with fill in an annotation and, for the StatefulSet, in its pod
// template), labelled as cf-hnc labels what builds and runs an app.
func appObjects(namespace, name, fill string) []client.Object {
	meta := metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{cfv1alpha1.AppLabel: name}, Annotations: map[string]string{"fill": fill}}
	container := corev1.Container{Name: "app", Image: "registry.local/app@sha256:" + strings.Repeat("a", 64)}
	set := &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: meta.Labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: meta.Labels, Annotations: meta.Annotations},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: container.Image, Env: []corev1.EnvVar{{Name: "FILL", Value: fill}}}}}},
	}}
	source := corev1alpha1.SourceConfig{Registry: &corev1alpha1.Registry{Image: "registry.local/source"}}
	return []client.Object{
		&corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{Containers: []corev1.Container{container}}},
		set,
		&kpackv1alpha2.Image{ObjectMeta: meta, Spec: kpackv1alpha2.ImageSpec{Tag: "registry.local/app", Source: source,
			Builder: corev1.ObjectReference{Kind: kpackv1alpha2.ClusterBuilderKind, Name: "cf.default"}}},
		&kpackv1alpha2.Build{ObjectMeta: meta, Spec: kpackv1alpha2.BuildSpec{Tags: []string{"registry.local/app"}, Source: source,
			Builder: corev1alpha1.BuildBuilderSpec{Image: "registry.local/builder"}}},
		&kpackv1alpha2.Builder{ObjectMeta: meta, Spec: kpackv1alpha2.NamespacedBuilderSpec{BuilderSpec: kpackv1alpha2.BuilderSpec{Tag: "registry.local/builder"}}},
	}
}

var _ = Describe("The manager's cache of what is not CF's", func() {
	// Review 3, N3: pods, StatefulSets and kpack objects were cached by a label that anybody
	// may set, anywhere in the cluster.
	It("holds of pods, StatefulSets and kpack objects outside CF's tree only their names, whoever labels them as an app's", func(ctx SpecContext) {
		neighbour := cftest.NewUser(ctx, k8s, "neighbour")
		teamX := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-x-" + string(uuid.NewUUID())[:8]}}
		Expect(k8s.Create(ctx, teamX)).To(Succeed())
		Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: teamX.Name, Name: "default"}})).To(Succeed())
		cftest.Bind(ctx, k8s, teamX.Name, "cluster-admin", neighbour.Subject()) // all rights in team-x, none elsewhere
		asNeighbour := neighbour.Client(apiserver)
		for _, kind := range []func() client.ObjectList{
			func() client.ObjectList { return &corev1.PodList{} }, func() client.ObjectList { return &appsv1.StatefulSetList{} },
			func() client.ObjectList { return &kpackv1alpha2.ImageList{} }, func() client.ObjectList { return &kpackv1alpha2.BuildList{} },
			func() client.ObjectList { return &kpackv1alpha2.BuilderList{} },
		} {
			Expect(cached.List(ctx, kind())).To(Succeed())                                      // the manager watches every one of these kinds
			Expect(asNeighbour.List(ctx, kind(), client.InNamespace(teamX.Name))).To(Succeed()) // and the neighbour's client knows them
		}
		before := heap()

		const flood = 20
		fill := strings.Repeat("x", 200<<10)
		// The objects as made, without what the apiserver answered: the heap is the cache's.
		var foreign []client.Object
		for i := range flood {
			for _, obj := range appObjects(teamX.Name, fmt.Sprintf("app-%d", i), fill) {
				Expect(asNeighbour.Create(ctx, obj.DeepCopyObject().(client.Object))).To(Succeed(), "%T", obj)
				foreign = append(foreign, obj)
			}
		}
		// What is made in the tree after them: once the cache holds it, it has seen them too.
		space := treeNamespace(ctx)
		ours := appObjects(space, "ours", "small")
		for _, obj := range ours {
			Expect(k8s.Create(ctx, obj)).To(Succeed(), "%T", obj)
		}
		for _, obj := range ours {
			held := obj.DeepCopyObject().(client.Object)
			Eventually(func() error { return cached.Get(ctx, client.ObjectKeyFromObject(obj), held) }).Should(Succeed())
			Expect(held.GetLabels()).To(HaveKeyWithValue(cfv1alpha1.AppLabel, "ours"), "%T of the tree, held whole", obj)
		}
		after := heap()
		growth := after - min(before, after)
		AddReportEntry("the manager's heap after a neighbour's 100 labelled objects of 200 to 600 KiB each (28 MiB), outside the tree", mib(growth))
		// About 5 MiB whatever the flood (the watches' buffers for its largest objects), and 2 KB
		// per object: measured with 25, 100 and 200 objects.
		Expect(growth).To(BeNumerically("<", 8<<20), "the names of %d objects, not their 28 MiB", len(foreign))

		for _, obj := range foreign {
			held := obj.DeepCopyObject().(client.Object)
			Expect(cached.Get(ctx, client.ObjectKeyFromObject(obj), held)).To(Succeed())
			Expect(held.GetLabels()).To(BeEmpty(), "%T %s", obj, obj.GetName())
			Expect(held.GetAnnotations()).To(BeEmpty(), "%T %s", obj, obj.GetName())
		}
		held := &appsv1.StatefulSet{}
		Expect(cached.Get(ctx, client.ObjectKeyFromObject(foreign[1]), held)).To(Succeed())
		Expect(held.Spec).To(Equal(appsv1.StatefulSetSpec{}), "nothing of its pod template")

	})
})

// The largest metadata that config/policies/bounds.yaml lets a tenant write on a CF object: 32
// labels and 32 annotations of 4 KiB together, 8 finalizers and 8 owner references.
func tenantMetadata(namespace, name string) metav1.ObjectMeta {
	meta := metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}
	for i := range 32 {
		meta.Labels[fmt.Sprintf("tenant.example/l%02d", i)] = strings.Repeat("l", 45)
		meta.Annotations[fmt.Sprintf("tenant.example/a%02d", i)] = strings.Repeat("a", 45)
	}
	for i := range 8 {
		meta.Finalizers = append(meta.Finalizers, fmt.Sprintf("tenant.example/f%d", i))
		meta.OwnerReferences = append(meta.OwnerReferences, metav1.OwnerReference{APIVersion: "tenant.example/v1", Kind: "Thing",
			Name: strings.Repeat("o", 63), UID: uuid.NewUUID()})
	}
	return meta
}

// longName is an object name of 253 characters, the longest.
var longName = strings.Repeat(strings.Repeat("n", 62)+".", 4)[:252] + "n"

// hostileSpace is what one space developer can make in a space at the default quotas
// (config/quotas: 50 apps, 100 processes, 200 packages, 200 builds), every CF object as large
// as the CRDs and the bounds take it, with what cf-hnc, kpack and Kubernetes make of it at most:
// a StatefulSet per process, an Image per app, kpack's history of 10 succeeded and 10 failed
// Builds per Image with their completed pods, and the statuses cf-hnc writes at their largest
// (a process list of 16 KiB per build, 100 instances per process).
func hostileSpace(namespace string) []client.Object {
	var objects []client.Object
	lifecycle := cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle, Data: cfv1alpha1.LifecycleData{Stack: strings.Repeat("s", 253)}}
	for range 20 {
		lifecycle.Data.Buildpacks = append(lifecycle.Data.Buildpacks, strings.Repeat("b", 255))
	}
	droplet := "registry.local/org/space/app@sha256:" + strings.Repeat("d", 64)
	var processTypes []cfv1alpha1.ProcessType
	for i := range cfv1alpha1.MaxProcessTypes {
		processTypes = append(processTypes, cfv1alpha1.ProcessType{Type: fmt.Sprintf("worker-%02d", i), Command: strings.Repeat("c", cfv1alpha1.MaxProcessListBytes/cfv1alpha1.MaxProcessTypes-10)})
	}
	for a := range 50 {
		app := fmt.Sprintf("%08d-0000-4000-8000-000000000000", a)
		objects = append(objects, &cfv1alpha1.CFApp{ObjectMeta: tenantMetadata(namespace, app),
			Spec: cfv1alpha1.CFAppSpec{DisplayName: strings.Repeat("n", 255), DesiredState: cfv1alpha1.StartedState, Lifecycle: lifecycle,
				CurrentDropletRef: corev1.LocalObjectReference{Name: longName}}})
		image := &kpackv1alpha2.Image{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: app, Labels: map[string]string{cfv1alpha1.AppLabel: app}},
			Spec: kpackv1alpha2.ImageSpec{Tag: "registry.local/org/space/" + app, ServiceAccountName: "cf-build-org",
				Builder: corev1.ObjectReference{Kind: kpackv1alpha2.ClusterBuilderKind, Name: "cf.default"},
				Source:  corev1alpha1.SourceConfig{Registry: &corev1alpha1.Registry{Image: strings.Repeat("i", 4096)}},
				Build:   &kpackv1alpha2.ImageBuild{Env: []corev1.EnvVar{{Name: cfv1alpha1.BuildGUIDEnv, Value: app}}}}}
		objects = append(objects, image)
		for b := range 20 {
			objects = append(objects, kpackBuild(namespace, app, b, image), buildPod(namespace, app, b))
		}
		for p := range 2 {
			process := &cfv1alpha1.CFProcess{ObjectMeta: tenantMetadata(namespace, fmt.Sprintf("%s-p%d", app, p)),
				Spec: cfv1alpha1.CFProcessSpec{AppRef: corev1.LocalObjectReference{Name: app}, ProcessType: "p" + strings.Repeat("t", 14),
					Command: strings.Repeat("c", 4096), Instances: 100, MemoryMB: 1024, DiskMB: 1024,
					HealthCheck: cfv1alpha1.HealthCheck{Type: cfv1alpha1.HTTPHealthCheck, Endpoint: "/" + strings.Repeat("h", 255), TimeoutSeconds: 60}}}
			for i := range int32(100) {
				process.Status.Instances = append(process.Status.Instances, cfv1alpha1.InstanceStatus{Index: i, State: cfv1alpha1.InstanceDown,
					Reason: cfv1alpha1.QuotaExceededReason, Image: droplet, Droplet: strings.Repeat("d", 63), AppStartedAt: "2026-12-08T00:00:00.123456789Z"})
			}
			objects = append(objects, process, instances(namespace, process))
		}
		for range 4 {
			pkg := &cfv1alpha1.CFPackage{ObjectMeta: tenantMetadata(namespace, string(uuid.NewUUID())),
				Spec: cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: app},
					Source: cfv1alpha1.PackageSource{Registry: cfv1alpha1.Registry{Image: strings.Repeat("i", 4096)}}}}
			for range 32 {
				pkg.Spec.Source.Registry.ImagePullSecrets = append(pkg.Spec.Source.Registry.ImagePullSecrets, corev1.LocalObjectReference{Name: longName})
			}
			build := &cfv1alpha1.CFBuild{ObjectMeta: tenantMetadata(namespace, string(uuid.NewUUID())),
				Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: app}, PackageRef: corev1.LocalObjectReference{Name: longName}, Lifecycle: lifecycle},
				Status: cfv1alpha1.CFBuildStatus{Droplet: &cfv1alpha1.BuildDropletStatus{Registry: cfv1alpha1.Registry{Image: droplet},
					Stack: "io.buildpacks.stacks.jammy", ProcessTypes: processTypes}}}
			objects = append(objects, pkg, build)
		}
	}
	return objects
}

// kpackBuild is a failed Build of kpack's history, with the end of a step's log in each of its
// steps' states, as kpack copies them from the pod.
func kpackBuild(namespace, app string, number int, image *kpackv1alpha2.Image) *kpackv1alpha2.Build {
	kb := &kpackv1alpha2.Build{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("%s-build-%d", app, number),
		Labels:      map[string]string{cfv1alpha1.AppLabel: app, kpackv1alpha2.ImageLabel: app, kpackv1alpha2.BuildNumberLabel: fmt.Sprint(number)},
		Annotations: map[string]string{kpackv1alpha2.BuildReasonAnnotation: "CONFIG", kpackv1alpha2.BuilderNameAnnotation: "cf.default"}},
		Spec: kpackv1alpha2.BuildSpec{Tags: []string{image.Spec.Tag}, Source: image.Spec.Source, Env: image.Spec.Build.Env,
			Builder: corev1alpha1.BuildBuilderSpec{Image: "registry.local/builder@sha256:" + strings.Repeat("b", 64)}, ServiceAccountName: "cf-build-org"}}
	kb.Status.PodName = kb.Name + "-build-pod"
	kb.Status.StepsCompleted = []string{"prepare", "analyze", "detect", "restore", "build"}
	for range 8 {
		kb.Status.StepStates = append(kb.Status.StepStates, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: strings.Repeat("m", 4096)}})
	}
	return kb
}

// buildPod is the completed pod of a kpack Build, labelled as kpack labels it.
func buildPod(namespace, app string, number int) *corev1.Pod {
	name := fmt.Sprintf("%s-build-%d", app, number)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-build-pod",
		Labels:      map[string]string{cfv1alpha1.AppLabel: app, kpackv1alpha2.ImageLabel: app, kpackv1alpha2.BuildLabel: name, kpackv1alpha2.BuildNumberLabel: fmt.Sprint(number)},
		Annotations: map[string]string{kpackv1alpha2.BuildReasonAnnotation: "CONFIG", kpackv1alpha2.BuilderNameAnnotation: "cf.default"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "completion", Image: "registry.local/completion",
			Env: []corev1.EnvVar{{Name: "FILL", Value: strings.Repeat("e", 4096)}}}}}}
}

// instances is the StatefulSet of a process, about as large as processes/workload.go makes it
// for the largest process.
func instances(namespace string, p *cfv1alpha1.CFProcess) *appsv1.StatefulSet {
	labels := map[string]string{cfv1alpha1.AppLabel: p.Spec.AppRef.Name, cfv1alpha1.ProcessLabel: p.Name}
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: p.Name, Labels: labels},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.local/org/space/app@sha256:" + strings.Repeat("d", 64),
					Command: []string{"/cnb/lifecycle/launcher", "--", "/bin/sh", "-c", p.Spec.Command},
					Env:     []corev1.EnvVar{{Name: "VCAP_APPLICATION", Value: strings.Repeat("v", 1024)}}}}}}}}
}

// create makes obj, and its status as the controller that owns it would write it.
func create(ctx context.Context, obj client.Object) error {
	status := obj.DeepCopyObject().(client.Object)
	if err := k8s.Create(ctx, obj); err != nil {
		return fmt.Errorf("%T %s: %w", obj, obj.GetName(), err)
	}
	switch status := status.(type) {
	case *cfv1alpha1.CFBuild, *cfv1alpha1.CFProcess, *kpackv1alpha2.Build:
		status.SetResourceVersion(obj.GetResourceVersion())
		return k8s.Status().Update(ctx, status)
	}
	return nil
}

var _ = Describe("The manager's cache of CF objects", func() {
	It("holds of a CF object only the labels and annotations cf-hnc reads", func(ctx SpecContext) {
		space := treeNamespace(ctx)
		build := &cfv1alpha1.CFBuild{ObjectMeta: tenantMetadata(space, string(uuid.NewUUID())),
			Spec: cfv1alpha1.CFBuildSpec{AppRef: corev1.LocalObjectReference{Name: "app"}, PackageRef: corev1.LocalObjectReference{Name: "package"},
				Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
		build.Finalizers = nil // the suite deletes it
		build.Labels[cfv1alpha1.RebuildOfLabel] = "first"
		build.Annotations[cfv1alpha1.RebuildReasonAnnotation] = "STACK"
		build.Annotations[cfv1alpha1.AppStartedAtAnnotation] = strings.Repeat("9", 1024) // a key cf-hnc reads, with a value no time has
		build.Annotations[corev1.LastAppliedConfigAnnotation] = strings.Repeat("{}", 1024)
		Expect(k8s.Create(ctx, build)).To(Succeed())

		held := &cfv1alpha1.CFBuild{}
		Eventually(func() error { return cached.Get(ctx, client.ObjectKeyFromObject(build), held) }).Should(Succeed())
		Expect(held.Labels).To(Equal(map[string]string{cfv1alpha1.RebuildOfLabel: "first"}))
		Expect(held.Annotations).To(Equal(map[string]string{cfv1alpha1.RebuildReasonAnnotation: "STACK"}))
		Expect(held.OwnerReferences).To(HaveLen(8), "kept: the garbage collector's, which cf-hnc does not write")
		Expect(held.ManagedFields).To(BeEmpty())
		Expect(held.Spec).To(Equal(build.Spec))
	})

	// Review 3, N2: one space developer filled the manager's memory within the sample quota.
	It("holds what one hostile space makes at the default quotas in a bounded share of the manager's memory", func(ctx SpecContext) {
		kinds := []client.ObjectList{&cfv1alpha1.CFAppList{}, &cfv1alpha1.CFProcessList{}, &cfv1alpha1.CFPackageList{}, &cfv1alpha1.CFBuildList{},
			&appsv1.StatefulSetList{}, &corev1.PodList{}, &kpackv1alpha2.ImageList{}, &kpackv1alpha2.BuildList{}}
		for _, kind := range kinds {
			Expect(cached.List(ctx, kind)).To(Succeed()) // every kind the manager watches of a space
		}
		space := treeNamespace(ctx)
		before := heap()

		work := make(chan client.Object)
		var created errgroup.Group
		for range 8 {
			created.Go(func() error {
				for obj := range work {
					if err := create(ctx, obj); err != nil {
						return err
					}
				}
				return nil
			})
		}
		for _, obj := range hostileSpace(space) {
			work <- obj
		}
		close(work)
		Expect(created.Wait()).To(Succeed())
		Eventually(func(g Gomega) {
			for _, kind := range kinds {
				g.Expect(cached.List(ctx, kind, client.InNamespace(space))).To(Succeed())
			}
			g.Expect(kinds[0].(*cfv1alpha1.CFAppList).Items).To(HaveLen(50))
			g.Expect(kinds[1].(*cfv1alpha1.CFProcessList).Items).To(HaveLen(100))
			g.Expect(kinds[2].(*cfv1alpha1.CFPackageList).Items).To(HaveLen(200))
			g.Expect(kinds[3].(*cfv1alpha1.CFBuildList).Items).To(HaveLen(200))
			g.Expect(kinds[4].(*appsv1.StatefulSetList).Items).To(HaveLen(100))
			g.Expect(kinds[5].(*corev1.PodList).Items).To(HaveLen(1000))
			g.Expect(kinds[6].(*kpackv1alpha2.ImageList).Items).To(HaveLen(50))
			g.Expect(kinds[7].(*kpackv1alpha2.BuildList).Items).To(HaveLen(1000))
			g.Expect(kinds[7].(*kpackv1alpha2.BuildList).Items[0].Status.PodName).NotTo(BeEmpty(), "the statuses too")
		}, "2m").Should(Succeed())
		for _, kind := range kinds {
			Expect(meta.SetList(kind, nil)).To(Succeed()) // the test holds none of it
		}
		after := heap()
		growth := after - min(before, after)
		AddReportEntry("the manager's heap after one hostile space at the default quotas (2,700 objects)", mib(growth))
		Expect(growth).To(BeNumerically("<", 28<<20), "about 20 MiB with what the cache leaves out, 62 MiB without (measured)")
	})
})
