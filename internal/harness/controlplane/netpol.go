package controlplane

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// NetworkPolicies are enforced on the node by kube-network-policies v0.8.0 (sigs.k8s.io/
// kube-network-policies), installed from its release manifest (install.yaml of its module) with
// its image built here (hack/tools.sh netpol-image: its queue rule patched to what this kernel
// has, and a command of ours, hack/tools/kube-network-policies). It runs on the host's network
// as its DaemonSet says, and queues the first packet of every connection from or to a pod for a
// verdict by the policies. What it does not see: a pod's connections to the host itself (the
// forwarded apiserver and registry, which the pod network's own rules bound), and connections
// that root processes of the host open (the apiserver calling webhooks, the kubelet's probes,
// the tests), which it always accepts.

const (
	netpolModule    = "sigs.k8s.io/kube-network-policies"
	netpolNamespace = "kube-system"
	netpolDaemonSet = "kube-network-policies"
	netpolTag       = "v0.8.0"
)

// netpolNames are the nftables table and the nfqueue of the node's enforcer: the work
// directory's own, so that control planes of several clones share a machine.
func netpolNames(l nodeLayout) (table string, queue int) {
	b, _ := hex.DecodeString(l.id[:4])
	return "cfhnc-" + l.id[:8], 1000 + int(b[0])<<8 | int(b[1])
}

// startNetworkPolicies installs the enforcer and waits until it runs on the node.
func (cp *ControlPlane) startNetworkPolicies(ctx context.Context) error {
	layout, err := cp.paths.binary("netpol-image")
	if err != nil {
		return err
	}
	image, err := cp.kpack.Registry.PublishLayoutImage(ctx, layout, "netpol", "k8s/kube-network-policies", netpolTag)
	if err != nil {
		return err
	}
	objs, err := cp.netpolRelease(image.Pinned())
	if err != nil {
		return err
	}
	if err := install.Apply(ctx, cp.Client, objs); err != nil {
		return fmt.Errorf("installing kube-network-policies: %w", err)
	}
	return cp.waitNetpolRunning(ctx)
}

// netpolRelease is kube-network-policies' install.yaml with the DaemonSet's container made this
// node's: the image, our command with its flags, the apiserver on the host's loopback (the pod
// shares the host's network, where the Service's cluster IP is not routed), and root, which its
// netlink work needs (the image's user is not); the NRI and network-namespace mounts go, NRI
// being off (containerd 1.6 has none).
func (cp *ControlPlane) netpolRelease(image string) ([]*unstructured.Unstructured, error) {
	dir, err := cp.paths.moduleDirIn(filepath.Join(cp.paths.projectDir, "hack", "tools", "kube-network-policies"), netpolModule)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, "install.yaml"))
	if err != nil {
		return nil, err
	}
	objs, err := decodeObjects(data)
	if err != nil {
		return nil, err
	}
	table, queue := netpolNames(cp.node.layout)
	for i, obj := range objs {
		if obj.GetKind() != "DaemonSet" || obj.GetName() != netpolDaemonSet {
			continue
		}
		ds := &appsv1.DaemonSet{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, ds); err != nil {
			return nil, err
		}
		spec := &ds.Spec.Template.Spec
		if len(spec.Containers) != 1 {
			return nil, fmt.Errorf("kube-network-policies' DaemonSet has %d containers, not one", len(spec.Containers))
		}
		c := &spec.Containers[0]
		c.Image = image
		c.Command = []string{"/ko-app/netpol"}
		c.Args = []string{"--hostname-override=$(MY_NODE_NAME)", "--nfqueue-id=" + strconv.Itoa(queue), "--nftables-table=" + table, "--v=2"}
		c.Env = append(c.Env,
			corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"},
			corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: cp.env.ControlPlane.APIServer.SecureServing.Port})
		c.VolumeMounts = nil
		spec.Volumes = nil
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		c.SecurityContext.RunAsUser = ptr.To[int64](0)
		converted, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ds)
		if err != nil {
			return nil, err
		}
		objs[i] = &unstructured.Unstructured{Object: converted}
		return objs, nil
	}
	return nil, fmt.Errorf("%s has no DaemonSet %s", filepath.Join(dir, "install.yaml"), netpolDaemonSet)
}

// waitNetpolRunning waits until the enforcer's pod runs and is ready on the node.
func (cp *ControlPlane) waitNetpolRunning(ctx context.Context) error {
	ds := &appsv1.DaemonSet{}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: netpolNamespace, Name: netpolDaemonSet}, ds); err != nil {
			last = err
			return false, nil
		}
		s := ds.Status
		if s.ObservedGeneration < ds.Generation || s.DesiredNumberScheduled == 0 || s.NumberReady != s.DesiredNumberScheduled || s.UpdatedNumberScheduled != s.DesiredNumberScheduled {
			last = fmt.Errorf("%d of %d pods ready and updated", s.NumberReady, s.DesiredNumberScheduled)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("kube-network-policies does not run: %v", last)
	}
	return nil
}

// removeNetpolTable deletes the enforcer's nftables table, which it removes itself only when it
// stops by a signal: the node's processes are killed at Stop.
func removeNetpolTable(l nodeLayout) error {
	table, _ := netpolNames(l)
	out, err := exec.Command("nft", "delete", "table", "inet", table).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "No such file or directory") {
		return fmt.Errorf("nft delete table inet %s: %w: %s", table, err, out)
	}
	return nil
}
