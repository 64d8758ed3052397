package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PackageType is the kind of a package; only source bits are staged.
// +kubebuilder:validation:Enum=bits
type PackageType string

// BitsPackage is an app's source code, uploaded as an image.
const BitsPackage PackageType = "bits"

// CFPackageSpec is an app's uploaded source.
type CFPackageSpec struct {
	// Type of the package.
	Type PackageType `json:"type"`
	// AppRef names the CFApp the package belongs to.
	// +kubebuilder:validation:XValidation:rule="!has(self.name) || self.name == '' || size(self.name) <= 63 && self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="appRef names a CFApp by its GUID, which names its kpack Image and its registry repositories: a DNS label (at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit) such as 4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10"
	AppRef corev1.LocalObjectReference `json:"appRef"`
	// Source is where the uploaded source image is.
	// +optional
	Source PackageSource `json:"source,omitempty"`
}

// PackageSource is where a package's bits are.
type PackageSource struct {
	// Registry is the source image; empty until the bits are uploaded.
	// +optional
	Registry Registry `json:"registry,omitempty"`
}

// CFPackage is an app's source package. It lives in its app's namespace.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=cfpkg
// +kubebuilder:printcolumn:name="App",type=string,JSONPath=`.spec.appRef.name`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.source.registry.image`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CFPackage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CFPackageSpec `json:"spec,omitempty"`
}

// CFPackageList is a list of CFPackages.
// +kubebuilder:object:root=true
type CFPackageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CFPackage `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CFPackage{}, &CFPackageList{})
}
