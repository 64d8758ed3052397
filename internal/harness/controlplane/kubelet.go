package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"text/template"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeletConfig is the kubelet's configuration on this machine: it serves on loopback only
// (the apiserver reaches it at its node name, 127.0.0.1, with a client certificate that the
// kubelet checks, then asks the apiserver whether that user may), keeps its state and the pod
// logs in the node's directory, runs pods under the node's cgroup with the cgroupfs driver
// (containerd 1.6 has no other here), and tolerates what this machine is: cgroup v1, swap, one
// small shared disk (eviction only when it is really full, so that a full disk shows as
// DiskPressure rather than as evicted builds). It syncs each pod every 10 s, not every minute:
// a Secret volume changes only at a pod's sync, and the webhook servers' first certificate,
// which their own rotators write into a Secret, would otherwise reach them after up to a minute.
var kubeletConfig = template.Must(template.New("kubelet").Parse(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: {{.Port}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {{.HealthzPort}}
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: {{.ClientCA}}
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://{{.ContainerdSocket}}
imageServiceEndpoint: unix://{{.ContainerdSocket}}
cgroupDriver: cgroupfs
cgroupRoot: {{.Cgroup}}
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
podLogsDir: {{.PodLogs}}
serializeImagePulls: false
maxPods: 250
evictionHard:
  memory.available: 100Mi
  nodefs.available: "{{.DiskThreshold}}"
  nodefs.inodesFree: 1%
  imagefs.available: "{{.DiskThreshold}}"
evictionPressureTransitionPeriod: 5s
syncFrequency: 10s
`))

// startKubelet runs the kubelet as the node's user (system:node:<name>, for the Node
// authorizer and NodeRestriction) and waits until the node is Ready.
func (cp *ControlPlane) startKubelet(ctx context.Context) error {
	binary, err := cp.paths.binary("kubelet")
	if err != nil {
		return err
	}
	l := cp.node.layout
	kubeconfig, err := cp.userKubeconfig("system:node:"+nodeName, "system:nodes")
	if err != nil {
		return err
	}
	if err := cp.bindKubeletAPIClient(ctx); err != nil {
		return err
	}
	serving, healthz, err := freeLoopbackAddrs()
	if err != nil {
		return err
	}
	cp.node.kubeletPort, cp.node.kubeletHealthzPort = port(serving), port(healthz)
	if err := cp.writeKubeletConfig(); err != nil {
		return err
	}
	if err := os.MkdirAll(l.kubeletDir(), 0o700); err != nil {
		return err
	}
	kubelet, err := startComponent("kubelet", cp.paths.logDir(), binary, []string{
		"--config=" + l.kubeletConfig(),
		"--kubeconfig=" + kubeconfig,
		"--hostname-override=" + nodeName,
		"--root-dir=" + l.kubeletDir(),
		"--cert-dir=" + filepath.Join(l.kubeletDir(), "pki"),
	}, nil)
	if err != nil {
		return err
	}
	cp.track(kubelet)
	if err := joinNodeCgroup(l.cgroup, kubelet.pid()); err != nil {
		return kubelet.failed(err)
	}
	return kubelet.waitUntil(ctx, 2*time.Minute, "a Ready node", cp.readyWhen(kubelet.name, cp.nodeReady))
}

// writeKubeletConfig writes the kubelet's configuration file. Its disk threshold is 1% free,
// or, while the node's disk counts as full (SetNodeDiskPressure), 99.99% free, which no disk in
// use has. (The kubelet ignores 100%, and refuses to start with a threshold above the disk's
// capacity.)
func (cp *ControlPlane) writeKubeletConfig() error {
	l := cp.node.layout
	threshold := "1%"
	if cp.node.diskFull {
		threshold = "99.99%"
	}
	return writeTemplate(l.kubeletConfig(), kubeletConfig, map[string]string{
		"Port":             strconv.Itoa(cp.node.kubeletPort),
		"HealthzPort":      strconv.Itoa(cp.node.kubeletHealthzPort),
		"ClientCA":         cp.kubeletClient.caFile,
		"ContainerdSocket": l.containerdSocket(),
		"Cgroup":           l.cgroup,
		"PodLogs":          filepath.Join(l.dir, "pod-logs"),
		"DiskThreshold":    threshold,
	})
}

// bindKubeletAPIClient lets the apiserver's kubelet client (pod logs, exec, port forwarding)
// use the kubelet's API, as kubeadm binds it.
func (cp *ControlPlane) bindKubeletAPIClient(ctx context.Context) error {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cf-hnc-local:kube-apiserver-kubelet-client"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: kubeletClientUser}},
	}
	if err := cp.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding the apiserver's kubelet client: %w", err)
	}
	return nil
}

// startScheduler runs kube-scheduler as the user its default RBAC binds, serving its health
// checks on loopback.
func (cp *ControlPlane) startScheduler(ctx context.Context) error {
	binary, err := cp.paths.binary("kube-scheduler")
	if err != nil {
		return err
	}
	kubeconfig, err := cp.userKubeconfig("system:kube-scheduler")
	if err != nil {
		return err
	}
	serving, _, err := freeLoopbackAddrs()
	if err != nil {
		return err
	}
	scheduler, err := startComponent("kube-scheduler", cp.paths.logDir(), binary, []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port(serving)),
		"--cert-dir=" + filepath.Join(cp.node.layout.dir, "kube-scheduler"),
		"--leader-elect=false",
	}, nil)
	if err != nil {
		return err
	}
	cp.track(scheduler)
	return scheduler.waitUntil(ctx, time.Minute, "ready", cp.readyWhen(scheduler.name, httpsOK("https://"+serving+"/healthz")))
}
