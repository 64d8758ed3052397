package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Cloud Foundry's defaults for a new process, as the CFProcess CRD defaults its fields. Clients
// fill every field themselves: a Go client sends zeros, which the CRD's defaults do not replace.
const (
	DefaultInstances                 = 1
	DefaultMemoryMB                  = 1024
	DefaultDiskMB                    = 1024
	DefaultHealthCheckTimeoutSeconds = 60
)

// OwnedByApp are the owner references of an object that goes with its app: its packages,
// builds and processes. They do not block the app's deletion: that would take a right on the
// app's finalizers, which no CF role grants to those who push.
func OwnedByApp(app *CFApp) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: GroupVersion.String(), Kind: "CFApp", Name: app.Name, UID: app.UID}}
}

// NewWebProcess is the web process of an app with Cloud Foundry's defaults, as cf-hnc makes it
// for every app: named, labelled and controlled by the app. Clients that make it first (with a
// push's scale) make this one, so that cf-hnc takes it for its own.
func NewWebProcess(app *CFApp) *CFProcess {
	owner := OwnedByApp(app)
	owner[0].Controller = ptr.To(true)
	return &CFProcess{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       app.Namespace,
			Name:            ProcessName(app.Name, WebProcessType),
			Labels:          map[string]string{AppLabel: app.Name, ProcessTypeLabel: WebProcessType},
			OwnerReferences: owner,
		},
		Spec: CFProcessSpec{
			AppRef:      corev1.LocalObjectReference{Name: app.Name},
			ProcessType: WebProcessType,
			Instances:   DefaultInstances,
			MemoryMB:    DefaultMemoryMB,
			DiskMB:      DefaultDiskMB,
			HealthCheck: HealthCheck{Type: PortHealthCheck, TimeoutSeconds: DefaultHealthCheckTimeoutSeconds},
		},
	}
}
