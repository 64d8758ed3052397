package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// The cf-hnc manager's pods, as faults and measurements reach them: the leader (the pod the
// lease names), its process on the node, its metrics endpoint.

// managerLease is the lease the manager's replicas elect their leader with.
const managerLease = "cf-hnc.workloads.cloudfoundry.org"

// ManagerLeader is the manager pod that holds the leader lease.
func (cp *ControlPlane) ManagerLeader(ctx context.Context) (*corev1.Pod, error) {
	lease := &coordinationv1.Lease{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: install.Namespace, Name: managerLease}, lease); err != nil {
		return nil, err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return nil, errors.New("no manager pod holds the lease")
	}
	pod := &corev1.Pod{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: install.Namespace, Name: *lease.Spec.HolderIdentity}, pod); err != nil {
		return nil, fmt.Errorf("the lease holder %s: %w", *lease.Spec.HolderIdentity, err)
	}
	return pod, nil
}

// CrashManager kills the leading manager's process at once (SIGKILL), as a crash would, and
// returns once the kubelet has seen its container end: the kubelet starts it again in the same
// pod, which keeps its name, hence its lease (WaitManagerReady waits for that).
func (cp *ControlPlane) CrashManager(ctx context.Context) error {
	leader, err := cp.ManagerLeader(ctx)
	if err != nil {
		return err
	}
	restarts := managerRestarts(leader)
	pids, err := cp.ContainerPIDs(leader, install.ManagerContainer)
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pod := &corev1.Pod{}
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(leader), pod); err != nil {
			return false, err
		}
		return managerRestarts(pod) > restarts, nil
	})
}

// managerRestarts is how often the kubelet restarted the manager's container of pod.
func managerRestarts(pod *corev1.Pod) int32 {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == install.ManagerContainer {
			return s.RestartCount
		}
	}
	return 0
}

// DeleteManagerLeader deletes the leading manager's pod at once, with no grace period, as the
// loss of its node would: another replica takes the lease over once it expires, and the
// Deployment makes a new pod. It returns the deleted pod's name.
func (cp *ControlPlane) DeleteManagerLeader(ctx context.Context) (string, error) {
	leader, err := cp.ManagerLeader(ctx)
	if err != nil {
		return "", err
	}
	return leader.Name, cp.deletePods(ctx, managerDeployment, func(p *corev1.Pod) bool { return p.UID == leader.UID })
}

// StopManager scales the manager's Deployment to zero: no replica runs, and cf-hnc's webhooks,
// which fail closed, refuse what they are called for. StartManager scales it back.
func (cp *ControlPlane) StopManager(ctx context.Context) error {
	return cp.StopComponent(ctx, managerDeployment.component)
}

// StartManager scales the manager's Deployment back to its replicas and waits until they run.
func (cp *ControlPlane) StartManager(ctx context.Context) error {
	return cp.StartComponent(ctx, managerDeployment.component)
}

// RestartManager replaces the manager's pods one at a time, as `kubectl rollout restart` does
// (and an upgrade that changes its pod template), and waits until the Deployment is rolled out.
func (cp *ControlPlane) RestartManager(ctx context.Context) error {
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: install.Namespace, Name: install.ManagerDeployment}}
	patch := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
	if err := cp.Client.Patch(ctx, deployment, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		return err
	}
	return cp.waitRolledOut(ctx, managerDeployment)
}

// WaitManagerReady waits until every manager pod is ready and a ready one leads: after a
// crash (CrashManager), until the kubelet has started the leader's container again.
func (cp *ControlPlane) WaitManagerReady(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		if last = cp.rolledOut(ctx, managerDeployment); last != nil {
			return false, nil
		}
		leader, err := cp.ManagerLeader(ctx)
		if last = err; err != nil {
			return false, nil
		}
		if !podReady(leader) {
			last = fmt.Errorf("the leader %s is not ready", leader.Name)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the manager is not ready: %v%s", last, cp.describePods(ctx, managerDeployment))
	}
	return nil
}

// ManagerPID is the process id, on this machine, of the leading manager's process.
func (cp *ControlPlane) ManagerPID(ctx context.Context) (int, error) {
	leader, err := cp.ManagerLeader(ctx)
	if err != nil {
		return 0, err
	}
	pids, err := cp.ContainerPIDs(leader, install.ManagerContainer)
	if err != nil {
		return 0, err
	}
	return pids[0], nil
}

// ManagerMetrics is the address of the leading manager's metrics endpoint (HTTPS), at its pod.
func (cp *ControlPlane) ManagerMetrics(ctx context.Context) (string, error) {
	leader, err := cp.ManagerLeader(ctx)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(leader.Status.PodIP, "8443"), nil
}

// ContainerPIDs are the processes of a running container of pod on the node, from the cgroup
// the kubelet made for it (cgroupfs driver: <node cgroup>/kubepods[/<QoS class>]/pod<UID>/<id>).
func (cp *ControlPlane) ContainerPIDs(pod *corev1.Pod, container string) ([]int, error) {
	if cp.node == nil {
		return nil, errors.New("the control plane runs no node")
	}
	var id string
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container && s.State.Running != nil {
			_, id, _ = strings.Cut(s.ContainerID, "://")
		}
	}
	if id == "" {
		return nil, fmt.Errorf("container %s of pod %s does not run", container, pod.Name)
	}
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return nil, err
	}
	for _, h := range hierarchies {
		if filepath.Base(h) != "pids" {
			continue
		}
		kubepods := filepath.Join(h, cp.node.layout.cgroup, "kubepods")
		for _, qos := range []string{"", "burstable", "besteffort"} {
			data, err := os.ReadFile(filepath.Join(kubepods, qos, "pod"+string(pod.UID), id, "cgroup.procs"))
			if err != nil {
				continue
			}
			var pids []int
			for _, field := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(field); err == nil {
					pids = append(pids, pid)
				}
			}
			if len(pids) > 0 {
				return pids, nil
			}
		}
	}
	return nil, fmt.Errorf("no process of container %s of pod %s found in the node's cgroups", container, pod.Name)
}
