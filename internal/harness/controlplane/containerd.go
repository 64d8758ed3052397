package controlplane

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"text/template"
	"time"
)

// containerdConfig is containerd 1.6's configuration for the node: its own root, state and
// socket, no TCP listener but the CRI streaming server on loopback, runc through its v2 shim,
// CNI plugins from Debian's package, the local registry over plain HTTP, and network
// namespaces under its own state directory so that removing the node finds them.
//
// restrict_oom_score_adj: root here may not lower a process's oom_score_adj, which every
// sandbox would otherwise try. disable_hugetlb_controller: the kernel has no hugetlb cgroup.
var containerdConfig = template.Must(template.New("containerd").Parse(`version = 2
root = "{{.Root}}"
state = "{{.State}}"
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = "{{.Socket}}"

[ttrpc]
  address = "{{.Socket}}.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{{.Root}}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{{.PauseImage}}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  restrict_oom_score_adj = true
  disable_hugetlb_controller = true
  netns_mounts_under_state_dir = true

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{{.Runc}}"
        Root = "{{.State}}/runc"
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{{.CNIBinDir}}"
    conf_dir = "{{.CNIConfDir}}"
    max_conf_num = 1

  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{{.RegistryHosts}}"
`))

// registryHosts tells containerd to pull from the local registry over plain HTTP.
var registryHosts = template.Must(template.New("hosts").Parse(`server = "http://{{.}}"

[host."http://{{.}}"]
  capabilities = ["pull", "resolve"]
`))

// startContainerd writes containerd's configuration and runs it in the node's cgroup.
func (cp *ControlPlane) startContainerd(ctx context.Context) error {
	l := cp.node.layout
	registry := cp.kpack.Registry.Host()
	hosts := filepath.Join(l.dir, "registry-hosts")
	if err := writeTemplate(filepath.Join(hosts, registry, "hosts.toml"), registryHosts, registry); err != nil {
		return err
	}
	config := filepath.Join(l.dir, "containerd.toml")
	err := writeTemplate(config, containerdConfig, map[string]string{
		"Root":          filepath.Join(l.dir, "containerd"),
		"State":         filepath.Join(l.runDir, "containerd"),
		"Socket":        l.containerdSocket(),
		"PauseImage":    cp.kpack.Images.Pause.Pinned(),
		"Runc":          nodeHostBinaries["runc"],
		"CNIBinDir":     filepath.Dir(nodeHostBinaries["CNI bridge plugin"]),
		"CNIConfDir":    filepath.Join(l.dir, "cni"),
		"RegistryHosts": hosts,
	})
	if err != nil {
		return err
	}
	containerd, err := startComponent("containerd", cp.paths.logDir(), nodeHostBinaries["containerd"], []string{"--config", config}, nil)
	if err != nil {
		return err
	}
	cp.track(containerd)
	if err := joinNodeCgroup(l.cgroup, containerd.pid()); err != nil {
		return containerd.failed(err)
	}
	return containerd.waitUntil(ctx, 30*time.Second, "ready", cp.readyWhen(containerd.name, func(context.Context) error {
		conn, err := net.Dial("unix", l.containerdSocket())
		if err != nil {
			return err
		}
		return conn.Close()
	}))
}

// writeTemplate renders t with data into path, making its directory.
func writeTemplate(path string, t *template.Template, data any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := t.Execute(f, data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
