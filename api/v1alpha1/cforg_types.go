package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BuildpackUpgradePolicy says what happens to an app when kpack rebuilds it because its
// buildpacks or its lifecycle changed.
// +kubebuilder:validation:Enum=Automatic;Held
type BuildpackUpgradePolicy string

const (
	// AutomaticUpgrades moves the app to the rebuilt droplet as soon as it is staged.
	AutomaticUpgrades BuildpackUpgradePolicy = "Automatic"
	// HeldUpgrades stages the rebuilt droplet and keeps the app on its current droplet until
	// the app is restaged (its currentDropletRef is set to the held droplet).
	HeldUpgrades BuildpackUpgradePolicy = "Held"
)

// CFOrgSpec is what a Cloud Foundry org is. The object's name is the org GUID and the name
// of the org's namespace.
type CFOrgSpec struct {
	// DisplayName is the org's name as Cloud Foundry users see it, unique case-insensitively.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	DisplayName string `json:"displayName"`

	// BuildpackUpgradePolicy applies to rebuilds that kpack starts because a buildpack or
	// the lifecycle changed. Rebuilds for a new stack run image (a base-image fix) are
	// always deployed automatically.
	// +kubebuilder:default=Held
	// +optional
	BuildpackUpgradePolicy BuildpackUpgradePolicy `json:"buildpackUpgradePolicy,omitempty"`
}

// CFOrgStatus is what cf-hnc observed of an org.
type CFOrgStatus struct {
	// Conditions: Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation these conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// The GUID rule holds while cf-hnc's webhooks are down. It is checked as an org is created
// only: names never change, and an org made before the rule can still be updated and deleted.
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.matches('^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')",optionalOldSelf=true,message="an org's or a space's name is its GUID and names its namespace: a lowercase UUID (8-4-4-4-12 hexadecimal digits) such as 4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10, as kubectl cf create-org and create-space make"

// CFOrg is a Cloud Foundry org: a namespace under the root namespace (`cf`), made by HNC.
// It lives in the root namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cforg
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CFOrg struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CFOrgSpec   `json:"spec,omitempty"`
	Status CFOrgStatus `json:"status,omitempty"`
}

// CFOrgList is a list of CFOrgs.
// +kubebuilder:object:root=true
type CFOrgList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CFOrg `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CFOrg{}, &CFOrgList{})
}

// GetDisplayName returns the org's display name.
func (o *CFOrg) GetDisplayName() string { return o.Spec.DisplayName }
