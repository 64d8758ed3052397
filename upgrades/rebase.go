package upgrades

import (
	"crypto/sha256"
	"encoding/hex"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/staging"
)

// maxAppPart bounds the app's part of a rebase's name: the name is also the value of the
// label kpack puts on the Build's pod (63 characters at most), and CF app GUIDs have 36.
const maxAppPart = 36

// rebaseName is the name of cf-hnc's rebase of an app's droplet image onto a run image, and
// of its CFBuild: the same rebase gets the same name, so a restart makes no second one, and a
// new run image gets a new one.
func rebaseName(app, droplet, runImage string) string {
	sum := sha256.Sum256([]byte(app + "\x00" + cfv1alpha1.ImageDigest(droplet) + "\x00" + cfv1alpha1.ImageDigest(runImage)))
	return app[:min(len(app), maxAppPart)] + "-rebase-" + hex.EncodeToString(sum[:])[:10]
}

// desiredRebase is the kpack Build with which cf-hnc rebases the droplet an app runs onto the
// run image its Builder gives for the droplet's stack now. It is a Build without an Image
// (kpack runs a rebase pod for a Build with spec.lastBuild, reason exactly STACK and a builder
// image of the droplet's stack id), pushed to the app's Image tag as the build
// ServiceAccount, owned by the app so that it goes with it. Its source is the droplet's
// package, which a rebase does not read; kpack's admission wants one.
func desiredRebase(app *cfv1alpha1.CFApp, current *cfv1alpha1.CFBuild, pkg *cfv1alpha1.CFPackage, image *kpackv1alpha2.Image, builder *builderStack) *kpackv1alpha2.Build {
	droplet := current.Status.Droplet
	source := image.Spec.Source
	if pkg != nil && pkg.Spec.Source.Registry.Image != "" {
		source = corev1alpha1.SourceConfig{Registry: &corev1alpha1.Registry{
			Image: pkg.Spec.Source.Registry.Image, ImagePullSecrets: pkg.Spec.Source.Registry.ImagePullSecrets,
		}}
	}
	// The limits of the app's last staging bound the rebase as they bound kpack's own.
	var resources corev1.ResourceRequirements
	var deadline *int64
	if image.Spec.Build != nil {
		resources, deadline = image.Spec.Build.Resources, image.Spec.Build.BuildTimeout
	}
	return &kpackv1alpha2.Build{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: app.Namespace,
			Name:      rebaseName(app.Name, droplet.Registry.Image, builder.runImage),
			Labels:    map[string]string{cfv1alpha1.AppLabel: app.Name, staging.RebaseOfLabel: current.Name},
			Annotations: map[string]string{
				kpackv1alpha2.BuildReasonAnnotation: staging.RebaseReason,
				kpackv1alpha2.BuilderKindAnnotation: builder.kind,
				kpackv1alpha2.BuilderNameAnnotation: builder.name,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: cfv1alpha1.GroupVersion.String(), Kind: "CFApp", Name: app.Name, UID: app.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: kpackv1alpha2.BuildSpec{
			Tags:                  []string{image.Spec.Tag},
			Builder:               corev1alpha1.BuildBuilderSpec{Image: builder.image},
			ServiceAccountName:    image.Spec.ServiceAccountName,
			Source:                source,
			RunImage:              kpackv1alpha2.BuildSpecImage{Image: builder.runImage},
			LastBuild:             &kpackv1alpha2.LastBuild{Image: droplet.Registry.Image, StackId: droplet.Stack},
			Resources:             resources,
			ActiveDeadlineSeconds: deadline,
		},
	}
}
