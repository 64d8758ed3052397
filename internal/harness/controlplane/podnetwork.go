package controlplane

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
)

// The pod network keeps pods inside this machine. Each pod that does not share the host's
// network gets a network namespace of its own, joined by a veth to the node's bridge, and an
// address of the node's /24 in 10.213.0.0/16 (one /24 per work directory). The host has the
// bridge's first address, so tests on this machine reach a pod's port; pods get no default
// route, and the host forwards nothing for them (the CNI bridge is not their gateway, and IP
// forwarding stays as it was), so a pod reaches only the bridge's subnet: other pods and the
// host's bridge address, where nothing of the project listens. There is no NAT.
//
// kpack's build pods are the exception: they push to the registry on 127.0.0.1, and run on the
// host's network (buildPodNetworkPolicy).

// podNetworkConfig is the CNI configuration containerd reads: Debian's bridge and host-local
// plugins, with the IP addresses kept in the node's directory.
var podNetworkConfig = template.Must(template.New("cni").Parse(`{
  "cniVersion": "1.0.0",
  "name": "cf-hnc",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "{{.Bridge}}",
      "isGateway": false,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "{{.Subnet}}", "rangeStart": "{{.First}}"}]],
        "dataDir": "{{.IPAMDir}}"
      }
    }
  ]
}
`))

// podSubnet is the node's pod subnet, and the host's address on the bridge.
func podSubnet(l nodeLayout) (subnet *net.IPNet, host net.IP) {
	b, _ := hex.DecodeString(l.id[:2])
	subnet = &net.IPNet{IP: net.IPv4(10, 213, b[0], 0).To4(), Mask: net.CIDRMask(24, 32)}
	return subnet, net.IPv4(10, 213, b[0], 1).To4()
}

// startPodNetwork makes the bridge with the host's address and writes the CNI configuration.
func (cp *ControlPlane) startPodNetwork(context.Context) error {
	l := cp.node.layout
	subnet, host := podSubnet(l)
	if err := subnetFree(subnet); err != nil {
		return fmt.Errorf("pod network: %w", err)
	}
	hostAddr := &net.IPNet{IP: host, Mask: subnet.Mask}
	for _, args := range [][]string{
		{"link", "add", "name", l.bridge, "type", "bridge"},
		{"addr", "add", hostAddr.String(), "dev", l.bridge},
		{"link", "set", l.bridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("pod network: ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	first := net.IPv4(subnet.IP[0], subnet.IP[1], subnet.IP[2], 2)
	return writeTemplate(filepath.Join(l.dir, "cni", "10-cf-hnc.conflist"), podNetworkConfig, map[string]string{
		"Bridge":  l.bridge,
		"Subnet":  subnet.String(),
		"First":   first.String(),
		"IPAMDir": filepath.Join(l.dir, "cni-ipam"),
	})
}

// subnetFree checks that no interface of the host has an address in subnet, so that the pod
// network shadows nothing.
func subnetFree(subnet *net.IPNet) error {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && (subnet.Contains(n.IP) || n.Contains(subnet.IP)) {
			return fmt.Errorf("the host already has %s, which overlaps the pod subnet %s (is another local control plane of this work directory running?)", n, subnet)
		}
	}
	return nil
}

// PodNetwork is the subnet the node's pods get addresses in; only this machine can reach it.
func (cp *ControlPlane) PodNetwork() *net.IPNet {
	if cp.node == nil {
		return nil
	}
	subnet, _ := podSubnet(cp.node.layout)
	return subnet
}
