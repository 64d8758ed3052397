package controlplane

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
)

// The pod network (ADR 4, "The node's network") keeps every pod inside this machine, and every
// server of the control plane on loopback. Each pod gets a network namespace of its own, joined
// by a veth to the node's bridge, and an address of the node's /24 in 10.213.0.0/16 (one /24
// per work directory). The host has the bridge's first address. Pods get two routes, none of
// them a default one: their /24, and the Service range through the host's bridge address. The
// host forwards nothing for them (IP forwarding stays off, and the FORWARD rules below drop
// whatever would leave or enter the bridge), and there is no masquerading.
//
// Two servers that listen on the host's loopback are what pods must reach: the apiserver (every
// in-cluster client, through the `kubernetes` Service) and the registry (builds push there, and
// the node pulls every image from it). The host forwards exactly those, with DNAT to their
// loopback ports:
//
//   - the `kubernetes` Service's cluster IP and port 443, and the host's bridge address at the
//     apiserver's port (the address the apiserver advertises as its endpoint), to the apiserver;
//   - the host's bridge address at the registry's port, to the registry, from pods and from the
//     host itself, so that an image is named the same everywhere: <bridge address>:<port>/...
//
// DNAT to 127.0.0.1 from another interface needs route_localnet, which is set on the bridge
// only. The host accepts from the bridge only those forwarded connections and the replies to its
// own (the apiserver calling webhooks, the kubelet probing, tests on this machine): the rule also
// drops packets for 127.0.0.0/8 that were not forwarded, as kube-proxy's does for CVE-2020-8558.
// Every rule is in chains named after the work directory, which removePodNetwork deletes.

// serviceSubnet is the apiserver's Service IP range; its first address is the `kubernetes`
// Service's. Only pods route to it, and only to the apiserver's address in it.
var serviceSubnet = &net.IPNet{IP: net.IPv4(10, 0, 0, 0).To4(), Mask: net.CIDRMask(24, 32)}

// kubernetesServiceIP is the `kubernetes` Service's cluster IP, which in-cluster clients dial.
var kubernetesServiceIP = net.IPv4(10, 0, 0, 1).To4()

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
        "routes": [{"dst": "{{.Services}}", "gw": "{{.Host}}"}],
        "dataDir": "{{.IPAMDir}}"
      }
    }
  ]
}
`))

// podNetwork is the node's bridge, its addresses and its forwarding rules.
type podNetwork struct {
	bridge string
	subnet *net.IPNet
	// host is the host's address on the bridge.
	host net.IP
	// chain prefixes the iptables chains of this network.
	chain string
}

func newPodNetwork(l nodeLayout) podNetwork {
	b, _ := hex.DecodeString(l.id[:2])
	return podNetwork{
		bridge: l.bridge,
		subnet: &net.IPNet{IP: net.IPv4(10, 213, b[0], 0).To4(), Mask: net.CIDRMask(24, 32)},
		host:   net.IPv4(10, 213, b[0], 1).To4(),
		chain:  "CFHNC-" + strings.ToUpper(l.id[:8]),
	}
}

// The chains: nat rules for what is forwarded, and filter rules for what the host accepts from
// the bridge and what it would forward.
func (n podNetwork) natChain() string     { return n.chain }
func (n podNetwork) inputChain() string   { return n.chain + "-IN" }
func (n podNetwork) forwardChain() string { return n.chain + "-FWD" }

// jumps are the rules of the built-in chains that enter this network's chains.
func (n podNetwork) jumps() [][]string {
	return [][]string{
		{"-t", "nat", "PREROUTING", "-i", n.bridge, "-j", n.natChain()},
		{"-t", "nat", "OUTPUT", "-d", n.host.String() + "/32", "-j", n.natChain()},
		{"-t", "filter", "INPUT", "-i", n.bridge, "-j", n.inputChain()},
		{"-t", "filter", "FORWARD", "-i", n.bridge, "-j", n.forwardChain()},
		{"-t", "filter", "FORWARD", "-o", n.bridge, "-j", n.forwardChain()},
	}
}

// create makes the bridge with the host's address, the chains and the CNI configuration.
func (n podNetwork) create(cniDir, ipamDir string) error {
	if err := subnetFree(n.subnet); err != nil {
		return fmt.Errorf("pod network: %w", err)
	}
	hostAddr := &net.IPNet{IP: n.host, Mask: n.subnet.Mask}
	for _, args := range [][]string{
		{"link", "add", "name", n.bridge, "type", "bridge"},
		{"addr", "add", hostAddr.String(), "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("pod network: ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	if err := os.WriteFile(filepath.Join("/proc/sys/net/ipv4/conf", n.bridge, "route_localnet"), []byte("1"), 0o644); err != nil {
		return fmt.Errorf("pod network: %w", err)
	}
	rules := [][]string{
		{"-t", "nat", "-N", n.natChain()},
		{"-t", "filter", "-N", n.inputChain()},
		{"-t", "filter", "-A", n.inputChain(), "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"},
		{"-t", "filter", "-A", n.inputChain(), "-m", "conntrack", "--ctstate", "DNAT", "-j", "ACCEPT"},
		{"-t", "filter", "-A", n.inputChain(), "-j", "DROP"},
		{"-t", "filter", "-N", n.forwardChain()},
		// Between two pods of the bridge (bridge netfilter shows bridged frames here).
		{"-t", "filter", "-A", n.forwardChain(), "-i", n.bridge, "-o", n.bridge, "-j", "RETURN"},
		{"-t", "filter", "-A", n.forwardChain(), "-j", "DROP"},
	}
	for _, jump := range n.jumps() {
		rules = append(rules, append([]string{jump[0], jump[1], "-A"}, jump[2:]...))
	}
	for _, rule := range rules {
		if err := iptables(rule...); err != nil {
			return fmt.Errorf("pod network: %w", err)
		}
	}
	subnet, first := n.subnet.IP, net.IPv4(n.subnet.IP[0], n.subnet.IP[1], n.subnet.IP[2], 2)
	return writeTemplate(filepath.Join(cniDir, "10-cf-hnc.conflist"), podNetworkConfig, map[string]string{
		"Bridge":   n.bridge,
		"Subnet":   (&net.IPNet{IP: subnet, Mask: n.subnet.Mask}).String(),
		"First":    first.String(),
		"Services": serviceSubnet.String(),
		"Host":     n.host.String(),
		"IPAMDir":  ipamDir,
	})
}

// forward lets pods (and, for the host's bridge address, the host too) reach the loopback port
// to at ip:port.
func (n podNetwork) forward(ip net.IP, port, to int) error {
	return iptables("-t", "nat", "-A", n.natChain(), "-d", ip.String()+"/32", "-p", "tcp", "--dport", strconv.Itoa(port),
		"-j", "DNAT", "--to-destination", "127.0.0.1:"+strconv.Itoa(to))
}

// remove deletes the chains, their jumps and the bridge; what is already gone is skipped.
func (n podNetwork) remove() error {
	var errs []error
	for _, jump := range n.jumps() {
		rule := append([]string{jump[0], jump[1], "-D"}, jump[2:]...)
		for iptables(append([]string{jump[0], jump[1], "-C"}, jump[2:]...)...) == nil {
			if err := iptables(rule...); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	for _, chain := range []struct{ table, name string }{{"nat", n.natChain()}, {"filter", n.inputChain()}, {"filter", n.forwardChain()}} {
		if iptables("-t", chain.table, "-nL", chain.name) != nil {
			continue
		}
		if err := iptables("-t", chain.table, "-F", chain.name); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, iptables("-t", chain.table, "-X", chain.name))
	}
	return errors.Join(append(errs, deleteBridge(n.bridge))...)
}

// iptables runs iptables with args, waiting for the xtables lock.
func iptables(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
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
	if cp.network == nil {
		return nil
	}
	return cp.network.subnet
}
