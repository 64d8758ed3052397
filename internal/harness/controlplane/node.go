package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The node is a real one: Debian's containerd and runc (hack/node-packages.sh installs them),
// the kubelet and kube-scheduler built from the pinned Kubernetes module, and a pod network of
// its own (podnetwork.go). The platform (HNC, kpack, cf-hnc), kpack's build pods and Cloud
// Foundry apps run on it.
//
// What the node leaves on the host is named after the work directory (nodeID), so that a
// control plane never touches another clone's node: a cgroup /cf-hnc-<id> in every v1
// hierarchy that holds every process of the node (containerd, its shims, the kubelet and every
// container), a directory /run/cf-hnc/<id> for sockets and runtime state, the bridge
// cfhnc<id> with its iptables chains CFHNC-<id>*, and <WorkDir>/node for images, snapshots,
// pod volumes and logs. Stop, and the next
// Start after a run that was killed outright, end every process of that cgroup and remove
// all of it (residue.go).

// nodeName is the node's name and the address the apiserver reaches its kubelet at: the
// kubelet refuses a loopback --node-ip, but takes it as its hostname.
const nodeName = "127.0.0.1"

// Where the node's Debian packages put what it runs.
var nodeHostBinaries = map[string]string{
	"containerd":              "/usr/bin/containerd",
	"containerd-shim-runc-v2": "/usr/bin/containerd-shim-runc-v2",
	"runc":                    "/usr/sbin/runc",
	"CNI bridge plugin":       "/usr/lib/cni/bridge",
	"CNI host-local plugin":   "/usr/lib/cni/host-local",
	"CNI loopback plugin":     "/usr/lib/cni/loopback",
	"iptables":                "/usr/sbin/iptables",
	"nft":                     "/usr/sbin/nft",
}

// node is the running node.
type node struct {
	layout                          nodeLayout
	kubeletPort, kubeletHealthzPort int
	// diskFull makes the kubelet count the disk as full (SetNodeDiskPressure).
	diskFull bool
}

// nodeLayout says where each part of the node lives on the host.
type nodeLayout struct {
	id string
	// dir holds the node's persistent state: containerd's images and snapshots, the kubelet's
	// pod directories, pod logs, CNI state.
	dir string
	// runDir holds sockets and runtime state; short, since a socket path has at most 107 bytes.
	runDir string
	// cgroup is the cgroup, in every v1 hierarchy, under which every process of the node runs.
	cgroup string
	bridge string
}

func newNodeLayout(workDir string) nodeLayout {
	sum := sha256.Sum256([]byte(workDir))
	id := hex.EncodeToString(sum[:])[:10]
	return nodeLayout{
		id:     id,
		dir:    filepath.Join(workDir, "node"),
		runDir: filepath.Join("/run/cf-hnc", id),
		cgroup: "/cf-hnc-" + id,
		bridge: "cfhnc" + id[:6],
	}
}

func (l nodeLayout) containerdSocket() string { return filepath.Join(l.runDir, "containerd.sock") }
func (l nodeLayout) kubeletDir() string       { return filepath.Join(l.dir, "kubelet") }
func (l nodeLayout) kubeletConfig() string    { return filepath.Join(l.dir, "kubelet.yaml") }

// prepareNode removes what an earlier run of this work directory left of its node, and makes
// the node's directories, cgroup and pod network. It comes before the apiserver, which
// advertises the host's address on the pod network.
func (cp *ControlPlane) prepareNode(context.Context) error {
	if err := nodePrerequisites(); err != nil {
		return err
	}
	layout := newNodeLayout(cp.paths.workDir)
	network := newPodNetwork(layout)
	if err := removeNodeResidue(layout, network); err != nil {
		return fmt.Errorf("node: removing what an earlier run left: %w", err)
	}
	for _, dir := range []string{layout.dir, layout.runDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	if err := createNodeCgroup(layout.cgroup); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	cp.node = &node{layout: layout}
	cp.network = &network
	return network.create(filepath.Join(layout.dir, "cni"), filepath.Join(layout.dir, "cni-ipam"))
}

// startNode starts containerd, the kubelet and kube-scheduler, and waits until the node is
// Ready. The registry must run: containerd pulls the pause image from it.
func (cp *ControlPlane) startNode(ctx context.Context) error {
	for _, step := range []func(context.Context) error{cp.startContainerd, cp.startKubelet, cp.startScheduler} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	clientset, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	cp.platform = &platform{replicas: map[platformDeployment]int32{}, stopped: map[platformDeployment]bool{}, clientset: clientset}
	return nil
}

// nodePrerequisites says what the node lacks on this machine, and how to get it.
func nodePrerequisites() error {
	if os.Geteuid() != 0 {
		return errors.New("node: containerd and the kubelet run as root; run as root (or without the node)")
	}
	var missing []string
	for what, path := range nodeHostBinaries {
		if _, err := exec.LookPath(path); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%s)", what, path))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("node: missing %v: run `make tools` (hack/node-packages.sh installs them)", missing)
	}
	return nil
}

// stopNode ends every process of the node and removes what it left on the host. The kubelet
// goes first, so that it restarts nothing while containerd and the containers stop.
func (cp *ControlPlane) stopNode() {
	if cp.node == nil {
		return
	}
	for _, name := range []string{"kube-scheduler", "kubelet", "containerd"} {
		if c, err := cp.component(name); err == nil {
			c.stop(10 * time.Second)
		}
	}
	if err := removeNodeResidue(cp.node.layout, *cp.network); err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: the node left residue: %v\n", err)
	}
	cp.node, cp.network = nil, nil
}

// nodeReady checks that the node reports Ready.
func (cp *ControlPlane) nodeReady(ctx context.Context) error {
	n := &corev1.Node{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: nodeName}, n); err != nil {
		return err
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status != corev1.ConditionTrue {
				return fmt.Errorf("node %s is not Ready: %s: %s", nodeName, c.Reason, c.Message)
			}
			return nil
		}
	}
	return fmt.Errorf("node %s reports no Ready condition yet", nodeName)
}
