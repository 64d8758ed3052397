package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HealthCheckType is how the platform tells that an instance is up, as Cloud Foundry's
// health-check types.
// +kubebuilder:validation:Enum=port;http;process
type HealthCheckType string

const (
	// PortHealthCheck: the instance accepts TCP connections on its port.
	PortHealthCheck HealthCheckType = "port"
	// HTTPHealthCheck: a GET of Endpoint on the instance's port answers 2xx or 3xx.
	HTTPHealthCheck HealthCheckType = "http"
	// ProcessHealthCheck: the process runs; for processes that serve nothing.
	ProcessHealthCheck HealthCheckType = "process"
)

// HealthCheck is a process's health check.
type HealthCheck struct {
	// Type is the kind of check.
	// +kubebuilder:default=port
	Type HealthCheckType `json:"type"`
	// Endpoint is the path an http check GETs.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/`
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// TimeoutSeconds is how long an instance may take to pass its first check before it
	// counts as crashed and is restarted.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=600
	// +kubebuilder:default=60
	TimeoutSeconds int32 `json:"timeoutSeconds"`
}

// CFProcessSpec is one process type of an app, as Cloud Foundry's V3 process: how many
// instances of it run and with what limits. It runs the process type of the droplet that its
// app's current droplet names; cf-hnc makes the web process of every app.
// +kubebuilder:validation:XValidation:rule="self.healthCheck.type != 'http' || has(self.healthCheck.endpoint)",message="an http health check needs an endpoint"
type CFProcessSpec struct {
	// AppRef names the CFApp, in the same namespace.
	// +kubebuilder:validation:XValidation:rule="!has(self.name) || self.name == '' || size(self.name) <= 63 && self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="appRef names a CFApp by its GUID, which names its kpack Image and its registry repositories: a DNS label (at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit) such as 4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10"
	AppRef corev1.LocalObjectReference `json:"appRef"`
	// ProcessType is the droplet's process type to run, for example "web".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="processType is immutable"
	ProcessType string `json:"processType"`
	// Command replaces the droplet's command for the process type, as `cf push -c` does; it
	// runs with the stack's /bin/sh -c through the CNB launcher, with the buildpacks'
	// environment.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Command string `json:"command,omitempty"`
	// Instances is how many instances run while the app is started.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=1
	Instances int32 `json:"instances"`
	// MemoryMB is each instance's memory limit, in MiB (CF's -m).
	// +kubebuilder:validation:Minimum=16
	// +kubebuilder:validation:Maximum=65536
	// +kubebuilder:default=1024
	MemoryMB int64 `json:"memoryMB"`
	// DiskMB is each instance's disk limit, in MiB (CF's -k): what it may write to its file
	// system and logs.
	// +kubebuilder:validation:Minimum=16
	// +kubebuilder:validation:Maximum=65536
	// +kubebuilder:default=1024
	DiskMB int64 `json:"diskMB"`
	// HealthCheck says when an instance is up (CF's -u).
	// +kubebuilder:default={type: port, timeoutSeconds: 60}
	HealthCheck HealthCheck `json:"healthCheck"`
}

// InstanceState is the state of one instance, with Cloud Foundry's names.
// +kubebuilder:validation:Enum=STARTING;RUNNING;CRASHED;DOWN
type InstanceState string

const (
	// InstanceStarting: the instance is being placed, pulled or started, or has not passed
	// its health check yet.
	InstanceStarting InstanceState = "STARTING"
	// InstanceRunning: the instance passes its health check.
	InstanceRunning InstanceState = "RUNNING"
	// InstanceCrashed: the instance exited or failed its health check, and waits to be
	// restarted.
	InstanceCrashed InstanceState = "CRASHED"
	// InstanceDown: the instance cannot start: its droplet cannot be pulled, or no node can
	// place it.
	InstanceDown InstanceState = "DOWN"
)

// InstanceStatus is what cf-hnc observed of one instance.
type InstanceStatus struct {
	// Index is the instance's index, CF_INSTANCE_INDEX.
	Index int32 `json:"index"`
	// State is the instance's state.
	State InstanceState `json:"state"`
	// Reason says why an instance is not RUNNING: one of the reasons of the Running condition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Restarts counts the times the platform restarted the instance after it crashed.
	Restarts int32 `json:"restarts"`
	// Image is the droplet image the instance runs, by digest: after a stack fix, every
	// instance has the rebased droplet's.
	Image string `json:"image"`
	// Droplet names the CFBuild whose droplet the instance runs, or is to run while it has no
	// pod. The CF API reports an instance of another droplet than its app's current one as
	// STARTING: it is being replaced.
	// +optional
	Droplet string `json:"droplet,omitempty"`
	// AppStartedAt is the process's app-started-at annotation that the instance's pod was made
	// with (or is to be): the start of its app through the CF API that the instance belongs to.
	// The CF API reports an instance made before its app's latest start as STARTING: it is
	// being replaced, and the cf CLI, which waits after a start until an instance runs, must not
	// take it for a new one.
	// +optional
	AppStartedAt string `json:"appStartedAt,omitempty"`
}

// CFProcessStatus is what cf-hnc observed of a process.
type CFProcessStatus struct {
	// Conditions: Running.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation these conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Droplet names the CFBuild whose droplet the instances are being given: the app's
	// current droplet while the app is started.
	// +optional
	Droplet string `json:"droplet,omitempty"`
	// DesiredInstances is how many instances should run now: Instances while the app is
	// started and has a droplet, else 0.
	DesiredInstances int32 `json:"desiredInstances"`
	// RunningInstances counts the instances that pass their health check.
	RunningInstances int32 `json:"runningInstances"`
	// CrashedInstances counts the instances that crashed and wait to be restarted.
	CrashedInstances int32 `json:"crashedInstances"`
	// Instances are the process's instances by index.
	// +listType=map
	// +listMapKey=index
	// +optional
	Instances []InstanceStatus `json:"instances,omitempty"`
	// Selector selects the instances' pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
}

// ProcessLabel is on the pods of a process's instances: the CFProcess's name.
const ProcessLabel = "workloads.cloudfoundry.org/process"

// ProcessTypeLabel is on CFProcesses and the pods of their instances: the process type.
const ProcessTypeLabel = "workloads.cloudfoundry.org/process-type"

// RestartedAtAnnotation on a CFProcess asks for every instance to be replaced, one at a time
// (`kubectl cf restart`): cf-hnc copies it onto the instances' pod template.
const RestartedAtAnnotation = "workloads.cloudfoundry.org/restarted-at"

// AppStartedAtAnnotation on a CFProcess is when the CF API last started its app (cf start,
// cf restart, cf push): cf-hnc copies it onto the instances' pod template, so that the
// instances made before are replaced, and reports per instance the one it was made with.
// Unlike a rolling restart (RestartedAtAnnotation), a start makes every instance new, as in
// Cloud Foundry: the CF API reports the instances made before it as STARTING.
const AppStartedAtAnnotation = "workloads.cloudfoundry.org/app-started-at"

// CFProcess is a process type of a Cloud Foundry app and its instances. It lives in its app's
// namespace, owned by the app.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.instances,statuspath=.status.runningInstances,selectorpath=.status.selector
// +kubebuilder:resource:shortName=cfprocess
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 52",message="a process name has at most 52 characters: its instances' pods are named after it"
// +kubebuilder:printcolumn:name="App",type=string,JSONPath=`.spec.appRef.name`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.processType`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredInstances`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.runningInstances`
// +kubebuilder:printcolumn:name="Crashed",type=integer,JSONPath=`.status.crashedInstances`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Running")].reason`
// +kubebuilder:printcolumn:name="Droplet",type=string,JSONPath=`.status.droplet`,priority=1
// +kubebuilder:printcolumn:name="Memory",type=integer,JSONPath=`.spec.memoryMB`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CFProcess struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CFProcessSpec   `json:"spec,omitempty"`
	Status CFProcessStatus `json:"status,omitempty"`
}

// CFProcessList is a list of CFProcesses.
// +kubebuilder:object:root=true
type CFProcessList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CFProcess `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CFProcess{}, &CFProcessList{})
}
