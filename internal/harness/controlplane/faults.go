package controlplane

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Faults: the failures a cluster meets, played on the local control plane so that tests can
// show that cf-hnc loses nothing and converges without manual action.

// StopComponent stops a component as an outage would: a host process (for example
// "kube-controller-manager") ends; a platform Deployment ("hnc-manager", "kpack-controller",
// "kpack-webhook", "cf-hnc-manager", "cf-api") is scaled to zero and its last pod is waited
// for. StartComponent starts it again.
func (cp *ControlPlane) StopComponent(ctx context.Context, name string) error {
	if d, ok := cp.platformDeployment(name); ok {
		cp.platform.stopped[d] = true
		return cp.scale(ctx, d, 0)
	}
	c, err := cp.component(name)
	if err != nil {
		return err
	}
	c.stop(10 * time.Second)
	return nil
}

// StartComponent starts a stopped component again: a host process with the same arguments, a
// platform Deployment scaled back to its replicas; it waits until the component is ready.
func (cp *ControlPlane) StartComponent(ctx context.Context, name string) error {
	if d, ok := cp.platformDeployment(name); ok {
		if err := cp.scale(ctx, d, cp.platform.replicas[d]); err != nil {
			return err
		}
		delete(cp.platform.stopped, d)
		return nil
	}
	for i, c := range cp.components {
		if c.name != name {
			continue
		}
		restarted, err := c.restart()
		if err != nil {
			return err
		}
		cp.components[i] = restarted
		cp.paths.recordPID(name, restarted.pid())
		if cp.node != nil && (name == "containerd" || name == "kubelet") {
			if err := joinNodeCgroup(cp.node.layout.cgroup, restarted.pid()); err != nil {
				return restarted.failed(err)
			}
		}
		if ready := cp.readiness[name]; ready != nil {
			return restarted.waitUntil(ctx, 2*time.Minute, "ready", ready)
		}
		return restarted.alive()
	}
	return fmt.Errorf("no component %q", name)
}

// readyWhen records how StartComponent checks that the component called name is ready again,
// and returns the check.
func (cp *ControlPlane) readyWhen(name string, check func(context.Context) error) func(context.Context) error {
	if cp.readiness == nil {
		cp.readiness = map[string]func(context.Context) error{}
	}
	cp.readiness[name] = check
	return check
}

// KillComponent ends a component at once, as a crash would: a host process's (SIGKILL; for
// containerd, its shims and the containers keep running, as they do on a real node), or every
// pod of a platform Deployment, deleted with no grace period (the Deployment makes new ones).
func (cp *ControlPlane) KillComponent(ctx context.Context, name string) error {
	if d, ok := cp.platformDeployment(name); ok {
		return cp.deletePods(ctx, d, func(*corev1.Pod) bool { return true })
	}
	c, err := cp.component(name)
	if err != nil {
		return err
	}
	c.kill()
	return nil
}

// SetNodeDiskPressure makes the node's disk count as full (on) or not, and waits until the
// node says so. The kubelet is restarted with an eviction threshold above what its file
// system has free, and reacts as it does to a full disk: the node reports DiskPressure and
// takes the disk-pressure taint, so that no new pod is scheduled, and the kubelet evicts pods
// that write to the disk. Filling this machine's shared disk for real is not an option.
func (cp *ControlPlane) SetNodeDiskPressure(ctx context.Context, on bool) error {
	if cp.node == nil {
		return errors.New("the control plane runs no node")
	}
	cp.node.diskFull = on
	if err := cp.writeKubeletConfig(); err != nil {
		return err
	}
	kubelet, err := cp.component("kubelet")
	if err != nil {
		return err
	}
	kubelet.stop(10 * time.Second)
	if err := cp.StartComponent(ctx, "kubelet"); err != nil {
		return err
	}
	kubelet, _ = cp.component("kubelet")
	return kubelet.waitUntil(ctx, 2*time.Minute, fmt.Sprintf("reporting DiskPressure %v", on), func(ctx context.Context) error {
		n := &corev1.Node{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: nodeName}, n); err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeDiskPressure && (c.Status == corev1.ConditionTrue) == on {
				return nil
			}
		}
		return fmt.Errorf("node %s does not report DiskPressure %v yet", nodeName, on)
	})
}

// RestartAPIServer kills kube-apiserver, as a crashed control-plane node would, and starts it
// again on the same address with the same certificates; etcd keeps the data, and every client
// reconnects. (A graceful stop drains watches for longer than a test should wait.)
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	apiserver := cp.env.ControlPlane.APIServer
	for _, pid := range childrenRunning(apiserver.Path) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// Stop returns once envtest has seen the process end, and resets its state for Start.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return apiserver.Stop() == nil, nil
	}); err != nil {
		return fmt.Errorf("kube-apiserver did not stop: %w", err)
	}
	if err := apiserver.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w; see %s", err, cp.paths.logDir())
	}
	for _, pid := range childrenRunning(apiserver.Path) {
		cp.paths.recordPID("kube-apiserver", pid)
	}
	return nil
}

func (cp *ControlPlane) component(name string) (*component, error) {
	for _, c := range cp.components {
		if c.name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("no component %q", name)
}
