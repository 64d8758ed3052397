package cftest

import (
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// DefaultBuilder is a space's default kpack Builder as an operator places it: stack cflinuxfs4,
// ClusterStore default, Go's buildpack.
func DefaultBuilder() *kpackv1alpha2.Builder {
	return &kpackv1alpha2.Builder{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: kpackv1alpha2.NamespacedBuilderSpec{BuilderSpec: kpackv1alpha2.BuilderSpec{
			Tag:       "registry.local/builders/default",
			Stack:     corev1.ObjectReference{Kind: kpackv1alpha2.ClusterStackKind, Name: "cflinuxfs4"},
			Store:     corev1.ObjectReference{Kind: kpackv1alpha2.ClusterStoreKind, Name: "default"},
			Lifecycle: corev1.ObjectReference{Kind: kpackv1alpha2.ClusterLifecycleKind, Name: "default-lifecycle"},
			Order: []kpackv1alpha2.BuilderOrderEntry{{Group: []kpackv1alpha2.BuilderBuildpackRef{
				{BuildpackRef: corev1alpha1.BuildpackRef{BuildpackInfo: corev1alpha1.BuildpackInfo{Id: "paketo-buildpacks/go"}, Optional: true}},
			}}},
		}},
	}
}

// ReadyBuilder is b as kpack reports it once it built the builder image of its spec.
func ReadyBuilder(b *kpackv1alpha2.Builder) *kpackv1alpha2.Builder {
	b = b.DeepCopy()
	b.Generation = 1
	b.Status.ObservedGeneration = 1
	b.Status.Conditions = corev1alpha1.Conditions{{Type: corev1alpha1.ConditionReady, Status: corev1.ConditionTrue}}
	return b
}

// BuildConfig is the build configuration that cf-hnc resolves for a space of org org-a: the
// org's droplet repository, build ServiceAccount and registry credentials.
func BuildConfig() *cfv1alpha1.SpaceBuildConfig {
	return &cfv1alpha1.SpaceBuildConfig{
		DropletRepositoryPrefix: "registry.local/org-a",
		ServiceAccount:          &cfv1alpha1.PlacedObject{Name: "cf-build-org", From: "org-a"},
		RegistryCredentials: []cfv1alpha1.RegistryCredential{
			{Registry: "registry.local", Secret: cfv1alpha1.PlacedObject{Name: "cf-registry-org", From: "org-a"}},
		},
	}
}
