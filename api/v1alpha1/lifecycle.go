package v1alpha1

import corev1 "k8s.io/api/core/v1"

// LifecycleType is how an app is staged. Only buildpack staging is supported.
type LifecycleType string

// BuildpackLifecycle stages with Cloud Native Buildpacks through kpack.
const BuildpackLifecycle LifecycleType = "buildpack"

// Lifecycle is the lifecycle block of CF apps and builds.
type Lifecycle struct {
	// Type of the lifecycle; "buildpack" is the only supported type.
	// +kubebuilder:validation:MaxLength=32
	Type LifecycleType `json:"type"`
	// Data says which buildpacks and stack to use; empty means the space's default Builder.
	// +optional
	Data LifecycleData `json:"data,omitempty"`
}

// LifecycleData is what a buildpack lifecycle names.
type LifecycleData struct {
	// Buildpacks are buildpack ids of the space's store (for example "paketo-buildpacks/go"),
	// in detection order. Empty means the buildpacks of the default Builder.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=255
	// +optional
	Buildpacks []string `json:"buildpacks,omitempty"`
	// Stack is the name of a kpack ClusterStack (for example "cflinuxfs4"). Empty means the
	// stack of the default Builder.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Stack string `json:"stack,omitempty"`
}

// IsDefault says whether the lifecycle names neither buildpacks nor a stack.
func (d LifecycleData) IsDefault() bool {
	return len(d.Buildpacks) == 0 && d.Stack == ""
}

// Registry is an image in a registry and the Secrets to pull it with.
type Registry struct {
	// Image is an image reference.
	// +kubebuilder:validation:MaxLength=4096
	Image string `json:"image"`
	// ImagePullSecrets are Secrets in the same namespace to pull Image with.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:XValidation:rule="!has(self.name) || size(self.name) <= 253",message="names a Secret, whose name has at most 253 characters"
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}
