package controlplane

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Faults: the failures a cluster meets, played on the local control plane so that tests can
// show that cf-hnc loses nothing and converges without manual action.

// StopComponent stops a component (for example "hnc-manager" or "kpack-controller") as an
// outage would; StartComponent starts it again with the same arguments.
func (cp *ControlPlane) StopComponent(name string) error {
	c, err := cp.component(name)
	if err != nil {
		return err
	}
	c.stop(10 * time.Second)
	return nil
}

// StartComponent starts a stopped component again, and waits until its process is up and,
// for HNC, until its webhooks answer.
func (cp *ControlPlane) StartComponent(ctx context.Context, name string) error {
	for i, c := range cp.components {
		if c.name != name {
			continue
		}
		restarted, err := c.restart()
		if err != nil {
			return err
		}
		cp.components[i] = restarted
		if cp.kpack != nil && cp.kpack.controller == c {
			cp.kpack.controller = restarted
		}
		cp.paths.recordPID(name, restarted.pid())
		if ready := cp.readiness[name]; ready != nil {
			return restarted.waitUntil(ctx, 2*time.Minute, "ready", ready)
		}
		return restarted.alive()
	}
	return fmt.Errorf("no component %q", name)
}

// KillManager ends the cf-hnc manager process at once (SIGKILL), as a crash would; unlike
// StopManager it gives the manager no chance to finish what it is doing.
func (cp *ControlPlane) KillManager() {
	if cp.manager != nil {
		cp.manager.kill()
		cp.manager = nil
	}
	if cp.stopSecretVolume != nil {
		cp.stopSecretVolume()
		cp.stopSecretVolume = nil
	}
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
