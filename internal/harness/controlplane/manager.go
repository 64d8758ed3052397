package controlplane

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// outOfClusterFlags are the manager flags whose values the local control plane sets instead of
// the Deployment's (install.go says why); every other flag is exactly the Deployment's.
var outOfClusterFlags = []string{
	"kubeconfig",                // no in-cluster config: the ServiceAccount is impersonated
	"health-probe-bind-address", // a free loopback port instead of the pod's :8081
	"metrics-bind-address",      // a free loopback port instead of the pod's :8443
	"webhook-host",              // 127.0.0.1 instead of every interface of the pod
	"webhook-port",              // a free loopback port instead of 9443
	"webhook-cert-dir",          // where the control plane copies the Secret, not the volume's path
	"cert-extra-dns-names",      // localhost: the apiserver calls the webhooks there
	"leader-election-identity",  // the process's name instead of the pod's
}

// StartManager starts the cf-hnc manager process, or starts it again after StopManager, and
// waits until it is ready: its webhook certificate rotated, mounted and injected, its webhook
// server answering with it.
func (cp *ControlPlane) StartManager(ctx context.Context) error {
	if cp.manager != nil {
		return fmt.Errorf("the cf-hnc manager is already running (pid %d)", cp.manager.pid())
	}
	p, err := cp.startManagerProcess(ctx, "cf-hnc-manager", cp.deployed.port, cp.deployed.certDir)
	if err != nil {
		return err
	}
	cp.manager, cp.managerArgs, cp.managerMetrics, cp.stopSecretVolume = p.component, p.args, p.metrics, p.stopVolume
	return nil
}

// Replica is another manager process, as the Deployment's second pod is: with its own ports and
// certificate directory. The webhook configuration keeps pointing at the first process.
type Replica struct {
	managerProcess
}

// Kill ends the replica at once, as a crash would.
func (r *Replica) Kill() {
	r.component.kill()
	r.stopVolume()
}

// Stop stops the replica as a rolling update would: it hands its leader lease over.
func (r *Replica) Stop() {
	r.component.stop(10 * time.Second)
	r.stopVolume()
}

// PID is the replica's process id.
func (r *Replica) PID() int { return r.component.pid() }

// StartManagerReplica starts a second manager process with the deployed flags; with leader
// election on, it waits for the lease while the first one holds it.
func (cp *ControlPlane) StartManagerReplica(ctx context.Context) (*Replica, error) {
	webhookAddr, _, err := freeLoopbackAddrs()
	if err != nil {
		return nil, err
	}
	p, err := cp.startManagerProcess(ctx, "cf-hnc-manager-replica", port(webhookAddr), cp.deployed.certDir+"-replica")
	if err != nil {
		return nil, err
	}
	return &Replica{*p}, nil
}

// managerProcess is a running manager and what it was started with.
type managerProcess struct {
	component  *component
	args       []string
	metrics    string
	stopVolume func()
}

// startManagerProcess starts a manager with the Deployment's args, but for those that must
// differ out of a cluster, and waits until it is ready.
func (cp *ControlPlane) startManagerProcess(ctx context.Context, name string, webhookPort int, certDir string) (*managerProcess, error) {
	d := cp.deployed
	probes, metrics, err := freeLoopbackAddrs()
	if err != nil {
		return nil, err
	}
	args, err := install.OverrideArgs(d.args, map[string]string{
		"kubeconfig":                d.kubeconfig,
		"health-probe-bind-address": probes,
		"metrics-bind-address":      metrics,
		"webhook-host":              "127.0.0.1",
		"webhook-port":              fmt.Sprint(webhookPort),
		"webhook-cert-dir":          certDir,
		"cert-extra-dns-names":      "localhost",
		"leader-election-identity":  name,
	}, outOfClusterFlags)
	if err != nil {
		return nil, err
	}
	// A new pod starts with a fresh volume: no certificate of an earlier Secret.
	if err := os.RemoveAll(certDir); err != nil {
		return nil, err
	}
	stopVolume := mountSecret(cp.Client, client.ObjectKey{Namespace: install.Namespace, Name: install.WebhookSecret},
		certDir, cp.paths.logDir())
	c, err := startComponent(name, cp.paths.logDir(), cp.opts.Manager, args, nil)
	if err != nil {
		stopVolume()
		return nil, err
	}
	cp.paths.recordPID(c.name, c.pid())
	p := &managerProcess{component: c, args: args, metrics: metrics, stopVolume: stopVolume}
	if err := c.waitUntil(ctx, time.Minute, "ready", httpOK("http://"+probes+"/readyz")); err != nil {
		c.stop(10 * time.Second)
		stopVolume()
		return nil, err
	}
	return p, nil
}

// ManagerPID is the process id of the running cf-hnc manager, or 0.
func (cp *ControlPlane) ManagerPID() int {
	if cp.manager == nil {
		return 0
	}
	return cp.manager.pid()
}

// ManagerArgs are the args the cf-hnc manager was last started with.
func (cp *ControlPlane) ManagerArgs() []string { return slices.Clone(cp.managerArgs) }

// ManagerKubeconfig is the kubeconfig the cf-hnc manager runs with: the admin's credentials,
// impersonating the deployed ServiceAccount.
func (cp *ControlPlane) ManagerKubeconfig() string { return cp.deployed.kubeconfig }

// ManagerMetrics is the address of the running manager's metrics endpoint (HTTPS).
func (cp *ControlPlane) ManagerMetrics() string { return cp.managerMetrics }

// DeployedArgs are the args of the manager's container in config/default's Deployment.
func (cp *ControlPlane) DeployedArgs() []string { return slices.Clone(cp.deployed.args) }

// StopManager stops the cf-hnc manager process, as a crash or a rolling update would.
func (cp *ControlPlane) StopManager() {
	if cp.manager != nil {
		cp.manager.stop(10 * time.Second)
		cp.manager = nil
	}
	if cp.stopSecretVolume != nil {
		cp.stopSecretVolume()
		cp.stopSecretVolume = nil
	}
}
