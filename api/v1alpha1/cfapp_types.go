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
	// +kubebuilder:validation:MaxLength=255
	DisplayName string `json:"displayName"`
	// DesiredState is whether the app should run.
	DesiredState DesiredState `json:"desiredState"`
	// Lifecycle is the app's default lifecycle for its builds.
	Lifecycle Lifecycle `json:"lifecycle"`
	// CurrentDropletRef names the CFBuild whose droplet the app runs. cf-hnc moves it to a
	// droplet that differs from the running one only in its run image (a stack fix) under
	// every policy, and to one with another stack, other buildpacks or another lifecycle when
	// the org's policy is Automatic. Setting it to the held droplet runs that droplet, as
	// `cf set-droplet` does; a restage stages the app's package again and runs the result.
	// +kubebuilder:validation:XValidation:rule="!has(self.name) || self.name == '' || size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="currentDropletRef names a CFBuild: a DNS subdomain (at most 253 lowercase letters, digits, '-' and '.')"
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
	// HeldDropletRef names a rebuilt droplet with another stack, other buildpacks or another
	// lifecycle, which waits, because the org's buildpack upgrade policy is Held, until
	// someone runs it (sets CurrentDropletRef to it) or restages the app.
	// +optional
	HeldDropletRef *corev1.LocalObjectReference `json:"heldDropletRef,omitempty"`
	// Droplet is what the droplet the app runs is made of, and the run image that a stack fix
	// moves it to: the app has the latest fix of its stack when RunImage and LatestRunImage
	// have the same digest.
	// +optional
	Droplet *AppDropletStatus `json:"droplet,omitempty"`
}

// AppDropletStatus describes the droplet an app runs, for rollouts of stack fixes.
type AppDropletStatus struct {
	// Stack is the stack id of the droplet.
	Stack string `json:"stack"`
	// RunImage is the droplet's run image, by digest.
	// +optional
	RunImage string `json:"runImage,omitempty"`
	// LatestRunImage is the run image that the app's Builder gives for the droplet's stack now.
	// Empty when its Builder builds another stack (BuilderStack) or is not known.
	// +optional
	LatestRunImage string `json:"latestRunImage,omitempty"`
	// BuilderStack is the stack id that the app's Builder builds now; empty while it is not
	// known. When it is not Stack, no stack fix reaches the droplet any more.
	// +optional
	BuilderStack string `json:"builderStack,omitempty"`
	// Rebuild names the CFBuild that puts the droplet on LatestRunImage, while it runs or
	// after it failed.
	// +optional
	Rebuild *corev1.LocalObjectReference `json:"rebuild,omitempty"`
}

// AppLabel is on the kpack Images, Builds and build pods of an app: the app's GUID. kpack
// copies an Image's labels onto its Builds and their pods, so
// `kubectl get pods -n <space> -l workloads.cloudfoundry.org/app=<guid>` lists every build
// of the app, also the rebases that cf-hnc starts itself.
const AppLabel = "workloads.cloudfoundry.org/app"

// CFApp is a Cloud Foundry app. It lives in its space's namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cfapp
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.desiredState`
// +kubebuilder:printcolumn:name="Droplet",type=string,JSONPath=`.spec.currentDropletRef.name`
// +kubebuilder:printcolumn:name="Current",type=string,JSONPath=`.status.conditions[?(@.type=="DropletCurrent")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="DropletCurrent")].reason`
// +kubebuilder:printcolumn:name="Held Droplet",type=string,JSONPath=`.status.heldDropletRef.name`,priority=1
// +kubebuilder:printcolumn:name="Stack",type=string,JSONPath=`.status.droplet.stack`,priority=1
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
