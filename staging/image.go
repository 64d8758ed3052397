package staging

import (
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// buildHistory is how many succeeded and failed builds kpack keeps per Image; set explicitly,
// as every kpack default is, because kpack's defaulting webhook may not run.
const buildHistory = 10

// desiredImage is the one kpack Image of an app, staging a build's package with a Builder or
// ClusterBuilder: tagged below the space's droplet repository, run as the build
// ServiceAccount, its build pods bounded by limits, owned by the app so that deleting the app
// deletes it and its builds.
func desiredImage(app *cfv1alpha1.CFApp, build *cfv1alpha1.CFBuild, pkg *cfv1alpha1.CFPackage, builder corev1.ObjectReference, space *cfv1alpha1.SpaceBuildConfig, limits BuildLimits) *kpackv1alpha2.Image {
	return &kpackv1alpha2.Image{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: app.Namespace,
			Name:      app.Name,
			// kpack copies it onto every Build of the Image and its pod.
			Labels: map[string]string{cfv1alpha1.AppLabel: app.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: cfv1alpha1.GroupVersion.String(), Kind: "CFApp", Name: app.Name, UID: app.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: kpackv1alpha2.ImageSpec{
			Tag:                cfv1alpha1.DropletRepository(space.DropletRepositoryPrefix, app.Name),
			Builder:            builder,
			ServiceAccountName: space.ServiceAccount.Name,
			Source: corev1alpha1.SourceConfig{Registry: &corev1alpha1.Registry{
				Image:            pkg.Spec.Source.Registry.Image,
				ImagePullSecrets: pkg.Spec.Source.Registry.ImagePullSecrets,
			}},
			Build: &kpackv1alpha2.ImageBuild{
				Env: []corev1.EnvVar{{Name: cfv1alpha1.BuildGUIDEnv, Value: build.Name}},
				// Stated at every staging, never between two: kpack starts a build (reason
				// CONFIG) when the resources change, and a staging starts one anyway.
				Resources:    limits.resources(),
				BuildTimeout: limits.timeoutSeconds(),
			},
			FailedBuildHistoryLimit:  ptr.To[int64](buildHistory),
			SuccessBuildHistoryLimit: ptr.To[int64](buildHistory),
			ImageTaggingStrategy:     corev1alpha1.None,
		},
	}
}

// defaultBuilderRef is what an Image builds with for the space's default Builder: the
// ClusterBuilder made from a Builder placed above the space, or the space's own Builder.
func defaultBuilderRef(config *cfv1alpha1.SpaceBuildConfig) corev1.ObjectReference {
	if config.Builder.ClusterBuilder != "" {
		return corev1.ObjectReference{Kind: kpackv1alpha2.ClusterBuilderKind, Name: config.Builder.ClusterBuilder}
	}
	return corev1.ObjectReference{Kind: kpackv1alpha2.BuilderKind, Name: config.Builder.Name}
}
