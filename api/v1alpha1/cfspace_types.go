package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CFSpaceSpec is what a Cloud Foundry space is. The object's name is the space GUID and the
// name of the space's namespace.
type CFSpaceSpec struct {
	// DisplayName is the space's name as Cloud Foundry users see it, unique case-insensitively
	// within its org.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	DisplayName string `json:"displayName"`
}

// CFSpaceStatus is what cf-hnc observed of a space.
type CFSpaceStatus struct {
	// Conditions: Ready (the namespace exists) and BuildReady (builds can run).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation these conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Build is what a build in this space uses, found in the space namespace with the
	// nearest level (space, then org, then root) winning. It is set as far as it could be
	// resolved; BuildReady says whether it is complete and valid.
	// +optional
	Build *SpaceBuildConfig `json:"build,omitempty"`
}

// SpaceBuildConfig is the resolved build configuration of a space. Credentials and the
// ServiceAccount are objects in the space namespace (HNC's copies, or the space's own); From
// names the namespace where the operator placed them.
type SpaceBuildConfig struct {
	// DropletRepositoryPrefix is the space's own repository, where its droplets are pushed as
	// "<prefix>/<app guid>": the repository placed at the org or the root, followed by the
	// namespaces below it down to the space, a narrower one, or one outside every repository
	// placed above that the space's own Secret sets.
	// +optional
	DropletRepositoryPrefix string `json:"dropletRepositoryPrefix,omitempty"`

	// RegistryCredentials are the winning credential Secrets, one per registry host.
	// +listType=map
	// +listMapKey=registry
	// +optional
	RegistryCredentials []RegistryCredential `json:"registryCredentials,omitempty"`

	// ServiceAccount is the ServiceAccount that builds run as.
	// +optional
	ServiceAccount *PlacedObject `json:"serviceAccount,omitempty"`

	// Builder is the default kpack Builder of the space.
	// +optional
	Builder *PlacedBuilder `json:"builder,omitempty"`
}

// PlacedObject is an object in the space namespace and the namespace it was placed in.
type PlacedObject struct {
	// Name of the object in the space namespace.
	Name string `json:"name"`
	// From is the namespace where the operator placed the object (the space itself, its org or
	// the root).
	From string `json:"from"`
}

// RegistryCredential is the credential Secret that wins for one registry host.
type RegistryCredential struct {
	// Registry is the registry host, as written in the Secret's docker config.
	Registry string `json:"registry"`
	// Secret is the credential Secret.
	Secret PlacedObject `json:"secret"`
}

// PlacedBuilder is the resolved default kpack Builder. Name is the Builder in From, the
// namespace where the operator placed it.
type PlacedBuilder struct {
	PlacedObject `json:",inline"`
	// ClusterBuilder is the kpack ClusterBuilder that cf-hnc makes from a Builder placed in the
	// org or the root namespace, once for all the spaces below; builds use it. It is empty for
	// a Builder placed in the space itself, which builds use directly.
	// +optional
	ClusterBuilder string `json:"clusterBuilder,omitempty"`
	// LatestImage is the builder image that builds use, as kpack last produced it.
	// +optional
	LatestImage string `json:"latestImage,omitempty"`
}

// SecretNames returns the names of the winning credential Secrets, for pull secrets lists.
func (c *SpaceBuildConfig) SecretNames() []corev1.LocalObjectReference {
	refs := make([]corev1.LocalObjectReference, 0, len(c.RegistryCredentials))
	for _, cred := range c.RegistryCredentials {
		refs = append(refs, corev1.LocalObjectReference{Name: cred.Secret.Name})
	}
	return refs
}

// The GUID rule holds while cf-hnc's webhooks are down. It is checked as an space is created
// only: names never change, and an space made before the rule can still be updated and deleted.
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.matches('^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')",optionalOldSelf=true,message="an org's or a space's name is its GUID and names its namespace: a lowercase UUID (8-4-4-4-12 hexadecimal digits) such as 4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10, as kubectl cf create-org and create-space make"

// CFSpace is a Cloud Foundry space: a namespace under its org's namespace, made by HNC. It
// lives in its org's namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cfspace
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Build Ready",type=string,JSONPath=`.status.conditions[?(@.type=="BuildReady")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="BuildReady")].reason`
// +kubebuilder:printcolumn:name="Builder",type=string,JSONPath=`.status.build.builder.name`,priority=1
// +kubebuilder:printcolumn:name="Droplets",type=string,JSONPath=`.status.build.dropletRepositoryPrefix`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CFSpace struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CFSpaceSpec   `json:"spec,omitempty"`
	Status CFSpaceStatus `json:"status,omitempty"`
}

// CFSpaceList is a list of CFSpaces.
// +kubebuilder:object:root=true
type CFSpaceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CFSpace `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CFSpace{}, &CFSpaceList{})
}

// GetDisplayName returns the space's display name.
func (s *CFSpace) GetDisplayName() string { return s.Spec.DisplayName }
