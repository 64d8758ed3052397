package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DesiredState is whether an app should run.
// +kubebuilder:validation:Enum=STOPPED;STARTED
type DesiredState string

const (
	StoppedState DesiredState = "STOPPED"
	StartedState DesiredState = "STARTED"
)

// CFAppSpec is what a Cloud Foundry app is. The object's name is the app GUID.
type CFAppSpec struct {
	// DisplayName is the app's name as Cloud Foundry users see it.
	// +kubebuilder:validation:MinLength=1
	DisplayName string `json:"displayName"`
	// DesiredState is whether the app should run.
	DesiredState DesiredState `json:"desiredState"`
	// Lifecycle is the app's default lifecycle for its builds.
	Lifecycle Lifecycle `json:"lifecycle"`
	// CurrentDropletRef names the CFBuild whose droplet the app runs. cf-hnc moves it to a
	// rebuilt droplet after a stack upgrade (and after a buildpack upgrade when the org's
	// policy is Automatic); setting it to a held droplet is the explicit restage.
	// +optional
	CurrentDropletRef corev1.LocalObjectReference `json:"currentDropletRef,omitempty"`
}

// CFAppStatus is what cf-hnc observed of an app.
type CFAppStatus struct {
	// Conditions: DropletCurrent.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation these conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// HeldDropletRef names a staged droplet that waits for an explicit restage, because the
	// org's buildpack upgrade policy is Held.
	// +optional
	HeldDropletRef *corev1.LocalObjectReference `json:"heldDropletRef,omitempty"`
}

// CFApp is a Cloud Foundry app. It lives in its space's namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cfapp
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.desiredState`
// +kubebuilder:printcolumn:name="Droplet",type=string,JSONPath=`.spec.currentDropletRef.name`
// +kubebuilder:printcolumn:name="Held Droplet",type=string,JSONPath=`.status.heldDropletRef.name`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CFApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CFAppSpec   `json:"spec,omitempty"`
	Status CFAppStatus `json:"status,omitempty"`
}

// CFAppList is a list of CFApps.
// +kubebuilder:object:root=true
type CFAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CFApp `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CFApp{}, &CFAppList{})
}
