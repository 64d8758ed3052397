package staging

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// Which CFBuild a kpack Build stages, or whose droplet it rebuilds. A push or a restage asks
// kpack for a build by naming its CFBuild in the Image's environment (StagedBuild); every later
// build of the Image that no CFBuild asked for is a rebuild, which upgrades makes a CFBuild of,
// named after the kpack Build (DesiredRebuild). Staging takes a droplet from a CFBuild marked as
// a rebuild only if its kpack Build bears it out (RebuildMismatch).

// RebaseReason is kpack's reason for a build that only rebases a droplet on a new run image,
// when the Builder's stack id is the droplet's; kpack gives the same reason for a move to
// another stack, which is a build from source.
const RebaseReason = "STACK"

// RebaseOfLabel is on the kpack Builds with which cf-hnc rebases the droplet an app runs: the
// name of the CFBuild whose droplet it rebases. The rebuild reconciler makes a CFBuild of such
// a Build as of any other rebuild.
const RebaseOfLabel = "workloads.cloudfoundry.org/rebase-of"

// StagedBuild returns the CFBuild that a kpack Build stages, from its environment.
func StagedBuild(b *kpackv1alpha2.Build) string {
	for _, env := range b.Spec.Env {
		if env.Name == cfv1alpha1.BuildGUIDEnv {
			return env.Value
		}
	}
	return ""
}

// BuildNumber is kpack's number of a build of an Image.
func BuildNumber(kb *kpackv1alpha2.Build) int {
	n, _ := strconv.Atoi(kb.Labels[kpackv1alpha2.BuildNumberLabel])
	return n
}

// LineageOf is the first CFBuild of a droplet's lineage: the build that staged its package.
func LineageOf(b *cfv1alpha1.CFBuild) string {
	if origin := b.Labels[cfv1alpha1.RebuildOfLabel]; origin != "" {
		return origin
	}
	return b.Name
}

// OlderFirst orders builds by creation, then (creation times have whole seconds) by kpack's
// build number, the first build of a lineage having none, then by name: the order in which
// kpack started them.
func OlderFirst(a, b *cfv1alpha1.CFBuild) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(rebuildNumber(a), rebuildNumber(b)), cmp.Compare(a.Name, b.Name))
}

// rebuildNumber is kpack's number of the build a rebuild follows; 0 for others.
func rebuildNumber(b *cfv1alpha1.CFBuild) int {
	n, _ := strconv.Atoi(b.Labels[cfv1alpha1.KpackBuildNumberLabel])
	return n
}

// RebuiltBuilds returns the CFBuilds whose droplet a kpack Build may rebuild, the one its
// rebuild is filed under first; none if the Build is not a rebuild:
//   - a rebase that cf-hnc started names the droplet in its RebaseOfLabel;
//   - a rebase of an app's Image (reason exactly STACK; never a push, whose reasons include
//     CONFIG) rebases the droplet image in its spec.lastBuild: the CFBuilds of the app with
//     that droplet (dropletBuilds), which are not the CFBuild in its environment when the
//     Image's latest push failed;
//   - any other build of the Image later than the one that staged the CFBuild in its
//     environment rebuilds that CFBuild's package.
func RebuiltBuilds(ctx context.Context, c client.Reader, kb *kpackv1alpha2.Build) ([]cfv1alpha1.CFBuild, error) {
	if droplet := kb.Labels[RebaseOfLabel]; droplet != "" {
		if !ownedByApp(kb) {
			return nil, nil // cf-hnc's rebases are owned by their app
		}
		rebased, err := get(ctx, c, kb.Namespace, droplet, &cfv1alpha1.CFBuild{})
		if rebased == nil || err != nil {
			return nil, err
		}
		return []cfv1alpha1.CFBuild{*rebased}, nil
	}
	guid := StagedBuild(kb)
	if guid == "" {
		return nil, nil // a kpack Build of an Image that cf-hnc did not make
	}
	if last := kb.Spec.LastBuild; kb.Annotations[kpackv1alpha2.BuildReasonAnnotation] == RebaseReason && last != nil && last.Image != "" {
		rebased, err := dropletBuilds(ctx, c, kb.Namespace, kb.Labels[kpackv1alpha2.ImageLabel], last.Image)
		if len(rebased) > 0 || err != nil {
			return rebased, err
		}
	}
	origin, err := get(ctx, c, kb.Namespace, guid, &cfv1alpha1.CFBuild{})
	if origin == nil || err != nil {
		return nil, err
	}
	if rebuild, err := isRebuildOf(ctx, c, kb, origin); !rebuild || err != nil {
		return nil, err
	}
	return []cfv1alpha1.CFBuild{*origin}, nil
}

// dropletBuilds returns the CFBuilds of an app whose droplet is image: the one the app runs
// first if it is one (a restage with nothing changed stages the same image again), then the
// others, oldest first.
func dropletBuilds(ctx context.Context, c client.Reader, namespace, app, image string) ([]cfv1alpha1.CFBuild, error) {
	running, err := get(ctx, c, namespace, app, &cfv1alpha1.CFApp{})
	if running == nil || err != nil {
		return nil, err
	}
	builds := &cfv1alpha1.CFBuildList{}
	if err := c.List(ctx, builds, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	found := slices.DeleteFunc(builds.Items, func(b cfv1alpha1.CFBuild) bool {
		return b.Spec.AppRef.Name != app || b.Status.Droplet == nil || !cfv1alpha1.SameImage(b.Status.Droplet.Registry.Image, image)
	})
	slices.SortFunc(found, func(a, b cfv1alpha1.CFBuild) int {
		switch running.Spec.CurrentDropletRef.Name {
		case a.Name:
			return -1
		case b.Name:
			return 1
		}
		return OlderFirst(&a, &b)
	})
	return found, nil
}

// ownedByApp says whether a kpack Build is owned by a CFApp.
func ownedByApp(kb *kpackv1alpha2.Build) bool {
	for _, ref := range kb.OwnerReferences {
		if ref.Kind == "CFApp" && ref.APIVersion == cfv1alpha1.GroupVersion.String() && ref.Name == kb.Labels[cfv1alpha1.AppLabel] {
			return true
		}
	}
	return false
}

// isRebuildOf says whether a kpack Build with the origin's name in its environment is a later
// build than the one that staged the origin.
func isRebuildOf(ctx context.Context, c client.Reader, kb *kpackv1alpha2.Build, origin *cfv1alpha1.CFBuild) (bool, error) {
	if origin.Status.KpackBuild == "" || origin.Status.KpackBuild == kb.Name {
		return false, nil
	}
	staged, err := get(ctx, c, kb.Namespace, origin.Status.KpackBuild, &kpackv1alpha2.Build{})
	if staged == nil || err != nil {
		// kpack has pruned the origin's build from its history; only later builds are left.
		return err == nil, err
	}
	return BuildNumber(kb) > BuildNumber(staged), nil
}

// DesiredRebuild is the CFBuild of a rebuild of a droplet: that droplet's app, package and
// lifecycle, in its lineage, bound to the kpack Build. A rebase that cf-hnc started has no
// kpack build number. The rebuild reconciler makes the app its owner, so that it goes with it.
func DesiredRebuild(kb *kpackv1alpha2.Build, rebuilt *cfv1alpha1.CFBuild) *cfv1alpha1.CFBuild {
	labels := map[string]string{
		cfv1alpha1.RebuildOfLabel:  LineageOf(rebuilt),
		cfv1alpha1.KpackBuildLabel: kb.Name,
	}
	if n, ok := kb.Labels[kpackv1alpha2.BuildNumberLabel]; ok {
		labels[cfv1alpha1.KpackBuildNumberLabel] = n
	}
	return &cfv1alpha1.CFBuild{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   kb.Namespace,
			Name:        kb.Name,
			Labels:      labels,
			Annotations: map[string]string{cfv1alpha1.RebuildReasonAnnotation: kb.Annotations[kpackv1alpha2.BuildReasonAnnotation]},
		},
		Spec: rebuilt.Spec,
	}
}

// RebuildMismatch says how a CFBuild marked as the rebuild of kpack Build kb differs from the
// CFBuild that cf-hnc makes of kb for any of rebuilt, the CFBuilds whose droplet kb may
// rebuild (RebuiltBuilds): its name, app, package and lifecycle, lineage, kpack build number
// and reasons; "" when it is that CFBuild. Only cf-hnc may mark a CFBuild as a rebuild
// (config/policies); this check holds without that policy.
func RebuildMismatch(build *cfv1alpha1.CFBuild, kb *kpackv1alpha2.Build, rebuilt []cfv1alpha1.CFBuild) string {
	if len(rebuilt) == 0 {
		return fmt.Sprintf("kpack build %s rebuilds no droplet in this namespace", kb.Name)
	}
	for i := range rebuilt {
		if sameRebuild(build, DesiredRebuild(kb, &rebuilt[i])) {
			return ""
		}
	}
	return fmt.Sprintf("kpack build %s makes %s, and this is %s", kb.Name, describeRebuild(DesiredRebuild(kb, &rebuilt[0])), describeRebuild(build))
}

// sameRebuild says whether two CFBuilds are the same rebuild: same name, marks and spec.
func sameRebuild(a, b *cfv1alpha1.CFBuild) bool {
	return a.Name == b.Name &&
		slices.IndexFunc(cfv1alpha1.OwnedBuildMetadata, func(key string) bool { return buildMark(a, key) != buildMark(b, key) }) < 0 &&
		equality.Semantic.DeepEqual(a.Spec, b.Spec)
}

// buildMark is the value of one of the labels or the annotation that mark a rebuild.
func buildMark(b *cfv1alpha1.CFBuild, key string) string {
	if key == cfv1alpha1.RebuildReasonAnnotation {
		return b.Annotations[key]
	}
	return b.Labels[key]
}

func describeRebuild(b *cfv1alpha1.CFBuild) string {
	return fmt.Sprintf("CFBuild %s of app %s, package %s, lineage %q, kpack build number %q, reasons %q",
		b.Name, b.Spec.AppRef.Name, b.Spec.PackageRef.Name, b.Labels[cfv1alpha1.RebuildOfLabel],
		b.Labels[cfv1alpha1.KpackBuildNumberLabel], b.Annotations[cfv1alpha1.RebuildReasonAnnotation])
}

// get reads an object, or returns nil if it does not exist.
func get[T client.Object](ctx context.Context, c client.Reader, namespace, name string, obj T) (T, error) {
	var none T
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return none, client.IgnoreNotFound(err)
	}
	return obj, nil
}
