package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
)

const (
	// kpackNamespace is kpack's system namespace.
	kpackNamespace = "kpack"
	// Stack is the name of the ClusterStack: the stack name that CF lifecycles use.
	Stack = "cflinuxfs4"
	// Store is the name of the ClusterStore that holds every seeded buildpack.
	Store = "default"
	// lifecycleName is the ClusterLifecycle that kpack 0.17+ requires; its release makes it.
	lifecycleName = "default-lifecycle"
	// kpackVersion is the kpack release installed on the node (its module's version in go.mod).
	kpackVersion = "v0.18.0"
)

// Kpack is the kpack side of the local control plane: the registry and the images seeded in
// it, and the cluster-scoped objects made from them, all Ready.
type Kpack struct {
	// Registry is the in-memory OCI registry on loopback, which pods reach at the host's
	// address on the pod network (Host()).
	Registry *registry.Registry
	// Images are the seeded stack, lifecycle and buildpack images.
	Images registry.Images
	// TenantPassword is the password of the registry's tenant accounts "orgs/<name>", once the
	// default Builder is placed.
	TenantPassword string

	mu sync.Mutex
	// releases counts the versions UpgradeBuildpack published, by buildpack id.
	releases map[string]int
}

func (k *Kpack) close() {
	if k.Registry != nil {
		_ = k.Registry.Close()
	}
}

// startRegistry starts the registry, named by the host's address on the pod network and
// forwarded there (podnetwork.go), and seeds it with the stack, the lifecycle, cf-hnc's
// buildpacks, kpack's images of build pods and the pause image.
func (cp *ControlPlane) startRegistry(ctx context.Context) error {
	registryLog, err := os.Create(filepath.Join(cp.paths.logDir(), "registry.log"))
	if err != nil {
		return err
	}
	reg, err := registry.Start(context.WithoutCancel(ctx), registry.Options{Log: registryLog, Host: cp.network.host})
	if err != nil {
		return fmt.Errorf("registry: %w; see %s", err, registryLog.Name())
	}
	cp.kpack = &Kpack{Registry: reg, releases: map[string]int{}}
	if err := cp.network.forward(cp.network.host, reg.Port(), reg.Port()); err != nil {
		return err
	}
	sources, err := cp.paths.seedSources(ctx)
	if err != nil {
		return err
	}
	if cp.kpack.Images, err = reg.Seed(ctx, sources); err != nil {
		return fmt.Errorf("registry: seeding images: %w; see %s", err, registryLog.Name())
	}
	return nil
}

// startKpack installs kpack's release on the node with its images from the registry, as
// docs/install.md has an operator install it, then creates the ClusterStack and ClusterStore and
// waits until kpack reports them and its release's ClusterLifecycle Ready.
func (cp *ControlPlane) startKpack(ctx context.Context) error {
	layout, err := cp.paths.binary("kpack-images")
	if err != nil {
		return err
	}
	values := map[string]string{
		"kpack_version":      kpackVersion,
		"build_init.image":   cp.kpack.Images.Kpack.BuildInit.Pinned(),
		"build_waiter.image": cp.kpack.Images.Kpack.BuildWaiter.Pinned(),
		"rebase.image":       cp.kpack.Images.Kpack.Rebase.Pinned(),
		"completion.image":   cp.kpack.Images.Kpack.Completion.Pinned(),
		"lifecycle.image":    cp.kpack.Images.Lifecycle.Image.Tag,
	}
	for _, name := range []string{"controller", "webhook"} {
		ref, err := cp.kpack.Registry.PublishLayoutImage(ctx, layout, name, "kpack/"+name, kpackVersion)
		if err != nil {
			return err
		}
		values[name+".image"] = ref.Pinned()
	}
	objs, err := cp.paths.kpackRelease(values)
	if err != nil {
		return err
	}
	if err := cp.applyPlatform(ctx, objs); err != nil {
		return fmt.Errorf("installing kpack: %w", err)
	}
	for _, d := range []platformDeployment{kpackWebhook, kpackController} {
		if err := cp.waitRolledOut(ctx, d); err != nil {
			return err
		}
	}
	for _, obj := range cp.kpack.clusterObjects() {
		if err := cp.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
		if err := cp.waitKpackReady(ctx, obj); err != nil {
			return err
		}
	}
	return cp.waitKpackReady(ctx, &kpackv1alpha2.ClusterLifecycle{ObjectMeta: metav1.ObjectMeta{Name: lifecycleName}})
}

// clusterObjects are the ClusterStack and ClusterStore made from the seeded images.
func (k *Kpack) clusterObjects() []client.Object {
	var sources []corev1alpha1.ImageSource
	for _, bp := range k.Images.Buildpacks {
		sources = append(sources, corev1alpha1.ImageSource{Image: bp.Image.Tag})
	}
	return []client.Object{
		&kpackv1alpha2.ClusterStack{
			ObjectMeta: metav1.ObjectMeta{Name: Stack},
			Spec: kpackv1alpha2.ClusterStackSpec{
				Id:         k.Images.Stack.ID,
				BuildImage: kpackv1alpha2.ClusterStackSpecImage{Image: k.Images.Stack.BuildImage.Tag},
				RunImage:   kpackv1alpha2.ClusterStackSpecImage{Image: k.Images.Stack.RunImage.Tag},
			},
		},
		&kpackv1alpha2.ClusterStore{
			ObjectMeta: metav1.ObjectMeta{Name: Store},
			Spec:       kpackv1alpha2.ClusterStoreSpec{Sources: sources},
		},
	}
}

// waitKpackReady waits until kpack reports obj Ready at its generation.
func (cp *ControlPlane) waitKpackReady(ctx context.Context, obj client.Object) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = cp.kpackReady(obj)(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%v%s", last, cp.describePods(ctx, kpackController))
	}
	return nil
}

// kpackReady checks that kpack reports an object Ready at its generation.
func (cp *ControlPlane) kpackReady(obj client.Object) func(context.Context) error {
	return func(ctx context.Context) error {
		current := obj.DeepCopyObject().(client.Object)
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(obj), current); err != nil {
			return err
		}
		var status *corev1alpha1.Status
		switch o := current.(type) {
		case *kpackv1alpha2.ClusterLifecycle:
			status = &o.Status.Status
		case *kpackv1alpha2.ClusterStack:
			status = &o.Status.Status
		case *kpackv1alpha2.ClusterStore:
			status = &o.Status.Status
		case *kpackv1alpha2.ClusterBuilder:
			status = &o.Status.Status
		}
		ready := status.GetCondition(corev1alpha1.ConditionReady)
		if !ready.IsTrue() || status.ObservedGeneration != current.GetGeneration() {
			return fmt.Errorf("%s is not Ready: %+v", obj.GetName(), ready)
		}
		return nil
	}
}

// UpgradeRunImage does what an operator does for a base-image (stack) fix: it publishes a new
// run image and points the ClusterStack at its digest. kpack then rebuilds every Builder on
// the stack, and every Image built on them with a rebase (reason STACK).
func (cp *ControlPlane) UpgradeRunImage(ctx context.Context) (registry.Ref, error) {
	ref, err := cp.kpack.Registry.PublishRunImage(ctx)
	if err != nil {
		return ref, err
	}
	stack := &kpackv1alpha2.ClusterStack{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: Stack}, stack); err != nil {
		return ref, err
	}
	patch := client.MergeFrom(stack.DeepCopy())
	stack.Spec.RunImage.Image = ref.Pinned()
	return ref, cp.Client.Patch(ctx, stack, patch)
}

// UpgradeBuildpack does what an operator does for a buildpack release: it publishes a new
// version of the buildpack, newer than any before (1.1.0, 1.2.0, ...), and adds it to the
// ClusterStore. kpack then rebuilds the Builders that use the buildpack, and the Images built
// with an older version (reason BUILDPACK).
func (cp *ControlPlane) UpgradeBuildpack(ctx context.Context, id string) (registry.Buildpack, error) {
	cp.kpack.mu.Lock()
	cp.kpack.releases[id]++
	version := fmt.Sprintf("1.%d.0", cp.kpack.releases[id])
	cp.kpack.mu.Unlock()
	bp, err := cp.kpack.Registry.PublishBuildpack(ctx, id, version)
	if err != nil {
		return bp, err
	}
	store := &kpackv1alpha2.ClusterStore{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: Store}, store); err != nil {
		return bp, err
	}
	patch := client.MergeFrom(store.DeepCopy())
	store.Spec.Sources = append(store.Spec.Sources, corev1alpha1.ImageSource{Image: bp.Image.Tag})
	return bp, cp.Client.Patch(ctx, store, patch)
}

// AddStack does what an operator does to offer a new stack: it publishes the stack's build and
// run image with stack id (registry.PublishStack) and creates a ClusterStack called name from
// them, then waits until kpack reports it Ready. A default Builder moves to it when its
// spec.stack names it; apps on the old stack are then rebuilt from source, since a droplet
// cannot be rebased across stack ids.
func (cp *ControlPlane) AddStack(ctx context.Context, name, id string) (registry.Stack, error) {
	stack, err := cp.kpack.Registry.PublishStack(ctx, id)
	if err != nil {
		return stack, err
	}
	clusterStack := &kpackv1alpha2.ClusterStack{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kpackv1alpha2.ClusterStackSpec{
			Id:         stack.ID,
			BuildImage: kpackv1alpha2.ClusterStackSpecImage{Image: stack.BuildImage.Tag},
			RunImage:   kpackv1alpha2.ClusterStackSpecImage{Image: stack.RunImage.Tag},
		},
	}
	if err := cp.Client.Create(ctx, clusterStack); err != nil && !apierrors.IsAlreadyExists(err) {
		return stack, err
	}
	return stack, cp.waitKpackReady(ctx, clusterStack)
}

// WithdrawBuildpack does what an operator does to back out a bad buildpack release: it
// removes the buildpackage of id at version from the ClusterStore's sources. kpack then
// rebuilds the Builders that used it with the version before, and the Images built with it.
func (cp *ControlPlane) WithdrawBuildpack(ctx context.Context, bp registry.Buildpack) error {
	store := &kpackv1alpha2.ClusterStore{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: Store}, store); err != nil {
		return err
	}
	patch := client.MergeFrom(store.DeepCopy())
	store.Spec.Sources = slices.DeleteFunc(store.Spec.Sources, func(s corev1alpha1.ImageSource) bool { return s.Image == bp.Image.Tag })
	return cp.Client.Patch(ctx, store, patch)
}

// stackShell is the static busybox of Debian's busybox-static package: the stacks' shell.
const stackShell = "/bin/busybox"

// SeedSources are what the registry's images are made of, for the project of opts: what
// `make tools` built, and cf-hnc's buildpacks, built now from this checkout into the work
// directory.
func SeedSources(ctx context.Context, opts Options) (registry.Sources, error) {
	p, err := findPaths(opts)
	if err != nil {
		return registry.Sources{}, err
	}
	return p.seedSources(ctx)
}

func (p paths) seedSources(ctx context.Context) (registry.Sources, error) {
	src := registry.Sources{Shell: stackShell}
	for tool, path := range map[string]*string{
		"lifecycle-image": &src.LifecycleImage,
		"kpack-images":    &src.KpackImages,
		"pause":           &src.Pause,
	} {
		var err error
		if *path, err = p.binary(tool); err != nil {
			return src, err
		}
	}
	dir := filepath.Join(p.workDir, "buildpacks")
	for program, path := range map[string]*string{
		"cnb-buildpack":     &src.Buildpack,
		"staticfile-server": &src.StaticfileServer,
	} {
		*path = filepath.Join(dir, program)
		build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", *path, "./internal/harness/buildpacks/cmd/"+program)
		build.Dir = p.projectDir
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := build.CombinedOutput(); err != nil {
			return src, fmt.Errorf("building the buildpack program %s: %w\n%s", program, err, out)
		}
	}
	return src, nil
}
