package builders

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// EffectiveLifecycle is the lifecycle a build uses: the build's own data if it names any, else
// the app's.
func EffectiveLifecycle(build *cfv1alpha1.CFBuild, app *cfv1alpha1.CFApp) cfv1alpha1.LifecycleData {
	if !build.Spec.Lifecycle.Data.IsDefault() {
		return build.Spec.Lifecycle.Data
	}
	return app.Spec.Lifecycle.Data
}

// UsesDefaultBuilder says whether a lifecycle is served by the space's default Builder: it
// names no buildpacks, and no stack or the default's own.
func UsesDefaultBuilder(lifecycle cfv1alpha1.LifecycleData, defaultBuilder *kpackv1alpha2.Builder) bool {
	return len(lifecycle.Buildpacks) == 0 &&
		(lifecycle.Stack == "" || lifecycle.Stack == defaultBuilder.Spec.Stack.Name)
}

// DedicatedBuilderName is the name of the Builder for a lifecycle: the same for every app of a
// space that names the same stack and buildpacks in the same order, so that they share it.
func DedicatedBuilderName(lifecycle cfv1alpha1.LifecycleData, defaultBuilder *kpackv1alpha2.Builder) string {
	stack := lifecycle.Stack
	if stack == "" {
		stack = defaultBuilder.Spec.Stack.Name
	}
	sum := sha256.Sum256([]byte(stack + "\x00" + strings.Join(lifecycle.Buildpacks, "\x00")))
	return "cf-lifecycle-" + hex.EncodeToString(sum[:])[:16]
}

// DesiredDedicatedBuilder is the Builder for a lifecycle, made from the default Builder: its
// store, lifecycle and (unless the lifecycle names another) stack, with the lifecycle's
// buildpacks in order, all of them required, as Cloud Foundry runs every buildpack named. Its
// image goes below the space's droplet repository, pushed with the build ServiceAccount.
func DesiredDedicatedBuilder(namespace string, lifecycle cfv1alpha1.LifecycleData, defaultBuilder *kpackv1alpha2.Builder, space *cfv1alpha1.SpaceBuildConfig) *kpackv1alpha2.Builder {
	name := DedicatedBuilderName(lifecycle, defaultBuilder)
	spec := kpackv1alpha2.BuilderSpec{
		Tag:       space.DropletRepositoryPrefix + "/builders/" + name,
		Stack:     defaultBuilder.Spec.Stack,
		Store:     defaultBuilder.Spec.Store,
		Lifecycle: defaultBuilder.Spec.Lifecycle,
		Order:     defaultBuilder.Spec.Order,
	}
	if lifecycle.Stack != "" {
		spec.Stack = corev1.ObjectReference{Kind: kpackv1alpha2.ClusterStackKind, Name: lifecycle.Stack}
	}
	if len(lifecycle.Buildpacks) > 0 {
		group := make([]kpackv1alpha2.BuilderBuildpackRef, len(lifecycle.Buildpacks))
		for i, id := range lifecycle.Buildpacks {
			group[i] = kpackv1alpha2.BuilderBuildpackRef{BuildpackRef: corev1alpha1.BuildpackRef{BuildpackInfo: corev1alpha1.BuildpackInfo{Id: id}}}
		}
		spec.Order = []kpackv1alpha2.BuilderOrderEntry{{Group: group}}
	}
	return &kpackv1alpha2.Builder{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
			cfv1alpha1.DedicatedBuilderLabel: "true",
		}},
		Spec: kpackv1alpha2.NamespacedBuilderSpec{
			BuilderSpec:        spec,
			ServiceAccountName: space.ServiceAccount.Name,
		},
	}
}
