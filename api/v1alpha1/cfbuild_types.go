package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CFBuildSpec is a request to stage a package of an app into a droplet.
type CFBuildSpec struct {
	// AppRef names the CFApp being staged.
	// +kubebuilder:validation:XValidation:rule="!has(self.name) || size(self.name) <= 253",message="appRef names a CFApp, whose name has at most 253 characters"
	AppRef corev1.LocalObjectReference `json:"appRef"`
	// PackageRef names the CFPackage being staged.
	// +kubebuilder:validation:XValidation:rule="!has(self.name) || size(self.name) <= 253",message="packageRef names a CFPackage, whose name has at most 253 characters"
	PackageRef corev1.LocalObjectReference `json:"packageRef"`
	// Lifecycle overrides the app's lifecycle for this build; empty data means the app's.
	Lifecycle Lifecycle `json:"lifecycle"`
}

// CFBuildStatus is the state of staging.
type CFBuildStatus struct {
	// Conditions: Staging and Succeeded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation these conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Builder is the kpack Builder in the space that stages this build.
	// +optional
	Builder string `json:"builder,omitempty"`
	// KpackBuild is the kpack Build that stages this build.
	// +optional
	KpackBuild string `json:"kpackBuild,omitempty"`
	// Droplet is the staged droplet, once Succeeded is True.
	// +optional
	Droplet *BuildDropletStatus `json:"droplet,omitempty"`
	// Rebuild is set on a rebuild (a CFBuild that cf-hnc made for a build it did not ask kpack
	// for): what its kpack Build started from and which run image it was made for.
	// +optional
	Rebuild *RebuildStatus `json:"rebuild,omitempty"`
}

// RebuildStatus says what a rebuild started from, as its kpack Build says.
type RebuildStatus struct {
	// Image is the droplet image the rebuild started from (the kpack Build's
	// spec.lastBuild.image). A rebase (reason exactly STACK, same stack id) puts this droplet,
	// unchanged but for its run image, on RunImage.
	// +optional
	Image string `json:"image,omitempty"`
	// RunImage is the run image the rebuild was made for (the kpack Build's
	// spec.runImage.image): the one its Builder gave for its stack when the rebuild started.
	// +optional
	RunImage string `json:"runImage,omitempty"`
}

// BuildDropletStatus is a staged droplet.
type BuildDropletStatus struct {
	// Registry is the droplet image, by digest, and the Secrets to pull it with.
	Registry Registry `json:"registry"`
	// Stack is the stack id of the droplet's run image.
	Stack string `json:"stack"`
	// RunImage is the run image the droplet is based on, by digest.
	// +optional
	RunImage string `json:"runImage,omitempty"`
	// Buildpacks are the buildpacks that contributed to the droplet.
	// +listType=atomic
	// +optional
	Buildpacks []BuildpackVersion `json:"buildpacks,omitempty"`
	// LifecycleVersion is the version of the buildpack lifecycle that built the droplet.
	// Together with Stack and Buildpacks it is what a stack fix must not change: a rebuilt
	// droplet that differs from the running one in any of them is an upgrade, which the org's
	// BuildpackUpgradePolicy decides on.
	// +optional
	LifecycleVersion string `json:"lifecycleVersion,omitempty"`
	// ProcessTypes are the app's processes.
	// +listType=map
	// +listMapKey=type
	// +optional
	ProcessTypes []ProcessType `json:"processTypes,omitempty"`
}

// BuildpackVersion is a buildpack id and version.
type BuildpackVersion struct {
	ID      string `json:"id"`
	Version string `json:"version"`
}

// ProcessType is one process of a droplet.
type ProcessType struct {
	// Type is the process type, for example "web".
	Type string `json:"type"`
	// Command starts the process.
	Command string `json:"command"`
}

// CFBuild stages a package into a droplet with kpack. It lives in its app's namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cfbuild
// +kubebuilder:printcolumn:name="App",type=string,JSONPath=`.spec.appRef.name`
// +kubebuilder:printcolumn:name="Staging",type=string,JSONPath=`.status.conditions[?(@.type=="Staging")].status`
// +kubebuilder:printcolumn:name="Succeeded",type=string,JSONPath=`.status.conditions[?(@.type=="Succeeded")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Succeeded")].reason`
// +kubebuilder:printcolumn:name="Builder",type=string,JSONPath=`.status.builder`,priority=1
// +kubebuilder:printcolumn:name="Droplet",type=string,JSONPath=`.status.droplet.registry.image`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CFBuild struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec cannot change: a build stages what it was created with, and a new build stages
	// anything else.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a CFBuild's spec cannot change once created: create a new CFBuild to stage again"
	Spec   CFBuildSpec   `json:"spec,omitempty"`
	Status CFBuildStatus `json:"status,omitempty"`
}

// CFBuildList is a list of CFBuilds.
// +kubebuilder:object:root=true
type CFBuildList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CFBuild `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CFBuild{}, &CFBuildList{})
}
