package v1alpha1

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CFBuildSpec is a request to stage a package of an app into a droplet.
type CFBuildSpec struct {
	// AppRef names the CFApp being staged.
	// +kubebuilder:validation:XValidation:rule="!has(self.name) || self.name == '' || size(self.name) <= 63 && self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="appRef names a CFApp by its GUID, which names its kpack Image and its registry repositories: a DNS label (at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit) such as 4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10"
	AppRef corev1.LocalObjectReference `json:"appRef"`
	// PackageRef names the CFPackage being staged.
	// +kubebuilder:validation:XValidation:rule="!has(self.name) || self.name == '' || size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="packageRef names a CFPackage: a DNS subdomain (at most 253 lowercase letters, digits, '-' and '.')"
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
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Buildpacks []BuildpackVersion `json:"buildpacks,omitempty"`
	// LifecycleVersion is the version of the buildpack lifecycle that built the droplet.
	// Together with Stack and Buildpacks it is what a stack fix must not change: a rebuilt
	// droplet that differs from the running one in any of them is an upgrade, which the org's
	// BuildpackUpgradePolicy decides on.
	// +optional
	LifecycleVersion string `json:"lifecycleVersion,omitempty"`
	// ProcessTypes are the app's processes: at most MaxProcessTypes, of at most
	// MaxProcessListBytes together (ValidateProcessTypes).
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	// +optional
	ProcessTypes []ProcessType `json:"processTypes,omitempty"`
}

// BuildpackVersion is a buildpack id and version.
type BuildpackVersion struct {
	// +kubebuilder:validation:MaxLength=255
	ID string `json:"id"`
	// +kubebuilder:validation:MaxLength=255
	Version string `json:"version"`
}

// ProcessType is one process of a droplet.
type ProcessType struct {
	// Type is the process type, for example "web".
	// +kubebuilder:validation:MaxLength=63
	Type string `json:"type"`
	// Command starts the process.
	// +kubebuilder:validation:MaxLength=4096
	Command string `json:"command"`
}

// The bounds of a droplet's process list, which a tenant's build writes (a Procfile, or a build
// step that rewrites the lifecycle's launch metadata) and cf-hnc copies into the CFBuild's
// status: the CRD holds the first three (ProcessTypes, ProcessType), and cf-hnc fails a build
// whose droplet goes beyond any of them (DropletInvalidReason) rather than keep megabytes of it
// in every client's cache.
const (
	MaxProcessTypes         = 32
	MaxProcessTypeLength    = 63
	MaxProcessCommandLength = 4096
	// MaxProcessListBytes bounds the types and commands together: 16 KiB, which a Procfile
	// of long commands stays well within.
	MaxProcessListBytes = 16 * 1024
)

// ValidateProcessTypes says what makes a droplet's process list exceed the bounds, or "".
func ValidateProcessTypes(processes []ProcessType) string {
	if len(processes) > MaxProcessTypes {
		return fmt.Sprintf("the droplet declares %d process types; at most %d are allowed", len(processes), MaxProcessTypes)
	}
	total := 0
	for _, p := range processes {
		switch {
		case len(p.Type) > MaxProcessTypeLength:
			return fmt.Sprintf("the droplet's process type %.20q... has %d characters; at most %d are allowed", p.Type, len(p.Type), MaxProcessTypeLength)
		case len(p.Command) > MaxProcessCommandLength:
			return fmt.Sprintf("the command of the droplet's process type %q has %d characters; at most %d are allowed", p.Type, len(p.Command), MaxProcessCommandLength)
		}
		total += len(p.Type) + len(p.Command)
	}
	if total > MaxProcessListBytes {
		return fmt.Sprintf("the droplet's process types and commands have %d bytes together; at most %d are allowed", total, MaxProcessListBytes)
	}
	return ""
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
