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
}

// StartManager starts the cf-hnc manager process, or starts it again after StopManager, and
// waits until it is ready: its webhook certificate rotated, mounted and injected, its webhook
// server answering with it.
func (cp *ControlPlane) StartManager(ctx context.Context) error {
	if cp.manager != nil {
		return fmt.Errorf("the cf-hnc manager is already running (pid %d)", cp.manager.pid())
	}
	d := cp.deployed
	probes, metrics, err := freeLoopbackAddrs()
	if err != nil {
		return err
	}
	args, err := install.OverrideArgs(d.args, map[string]string{
		"kubeconfig":                d.kubeconfig,
		"health-probe-bind-address": probes,
		"metrics-bind-address":      metrics,
		"webhook-host":              "127.0.0.1",
		"webhook-port":              fmt.Sprint(d.port),
		"webhook-cert-dir":          d.certDir,
		"cert-extra-dns-names":      "localhost",
	}, outOfClusterFlags)
	if err != nil {
		return err
	}
	// A new pod starts with a fresh volume: no certificate of an earlier Secret.
	if err := os.RemoveAll(d.certDir); err != nil {
		return err
	}
	cp.stopSecretVolume = mountSecret(cp.Client, client.ObjectKey{Namespace: install.Namespace, Name: install.WebhookSecret},
		d.certDir, cp.paths.logDir())
	manager, err := startComponent("cf-hnc-manager", cp.paths.logDir(), cp.opts.Manager, args, nil)
	if err != nil {
		return err
	}
	cp.manager, cp.managerArgs, cp.managerMetrics = manager, args, metrics
	cp.paths.recordPID(manager.name, manager.pid())
	return manager.waitUntil(ctx, time.Minute, "ready", httpOK("http://"+probes+"/readyz"))
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
