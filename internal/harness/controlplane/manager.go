package controlplane

import (
	"context"
	"fmt"
	"strconv"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// managerUser is the identity of the cf-hnc manager process. It is bound to the ClusterRole
// that controller-gen generates from the RBAC markers, so that a missing marker fails the e2e
// suite as it would fail in a cluster.
const managerUser = "cf-hnc-manager"

// managerRole is the ClusterRole in config/rbac/role.yaml.
const managerRole = "cf-hnc-manager-role"

// StartManager starts the cf-hnc manager process, or starts it again after StopManager, and
// waits until it is ready and its webhooks are registered.
func (cp *ControlPlane) StartManager(ctx context.Context) error {
	if cp.manager != nil {
		return fmt.Errorf("the cf-hnc manager is already running (pid %d)", cp.manager.pid())
	}
	kubeconfig, err := cp.managerKubeconfig(ctx)
	if err != nil {
		return err
	}
	probes, metrics, err := freeLoopbackAddrs()
	if err != nil {
		return err
	}
	host, port, certDir := cp.Webhooks()
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--health-probe-bind-address=" + probes,
		"--metrics-bind-address=" + metrics,
		"--webhook-host=" + host,
		"--webhook-port=" + strconv.Itoa(port),
		"--webhook-cert-dir=" + certDir,
	}
	manager, err := startComponent("cf-hnc-manager", cp.paths.logDir(), cp.opts.Manager, args, nil)
	if err != nil {
		return err
	}
	cp.manager = manager
	cp.paths.recordPID(manager.name, manager.pid())
	if err := manager.waitUntil(ctx, time.Minute, "ready", httpOK("http://"+probes+"/readyz")); err != nil {
		return err
	}
	if !cp.webhooksRegistered {
		if err := cp.RegisterWebhooks(); err != nil {
			return manager.failed(fmt.Errorf("webhooks could not be registered: %w", err))
		}
		cp.webhooksRegistered = true
	}
	return nil
}

// ManagerPID is the process id of the running cf-hnc manager, or 0.
func (cp *ControlPlane) ManagerPID() int {
	if cp.manager == nil {
		return 0
	}
	return cp.manager.pid()
}

// StopManager stops the cf-hnc manager process, as a crash or a rolling update would.
func (cp *ControlPlane) StopManager() {
	if cp.manager != nil {
		cp.manager.stop(10 * time.Second)
		cp.manager = nil
	}
}

// managerKubeconfig writes the manager's kubeconfig once and binds its user to the generated
// ClusterRole.
func (cp *ControlPlane) managerKubeconfig(ctx context.Context) (string, error) {
	if cp.managerConfig != "" {
		return cp.managerConfig, nil
	}
	if err := applyFile(ctx, cp.Client, cp.paths.config("rbac", "role.yaml")); err != nil {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: managerUser + "-local"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: managerRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: managerUser}},
	}
	if err := cp.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	kubeconfig, err := cp.userKubeconfig(managerUser)
	if err != nil {
		return "", err
	}
	cp.managerConfig = kubeconfig
	return kubeconfig, nil
}
