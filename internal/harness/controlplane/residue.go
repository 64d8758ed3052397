package controlplane

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// containerd's shims outlive containerd, runc's containers outlive their shims, and the kubelet
// and containerd leave mounts, cgroups and network devices behind when they stop or are
// killed. Everything of the node runs in its own cgroup, so removeNodeResidue ends exactly the
// node's processes, by the pids that cgroup lists, and removes what they left.

// removeNodeResidue ends every process of the node's cgroup, unmounts what is mounted below the
// node's directories, and removes its cgroups (in the unified hierarchy too, where the kubelet
// makes its own), pod network, NetworkPolicy enforcer's nftables table and runtime directory.
// The node's directory goes too, but for the pod logs. Doing it when nothing is left is cheap.
func removeNodeResidue(l nodeLayout, network podNetwork) error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var errs []error
	if err := killCgroup(hierarchies, l.cgroup); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, unmountBelow(l.dir, l.runDir))
	unified, err := unifiedHierarchy()
	if err != nil {
		errs = append(errs, err)
	}
	for _, h := range append(hierarchies, unified...) {
		errs = append(errs, removeCgroupTree(filepath.Join(h, l.cgroup)))
	}
	errs = append(errs, network.remove(), removeNetpolTable(l), os.RemoveAll(l.runDir), removeAllBut(l.dir, "pod-logs"))
	return errors.Join(errs...)
}

// cgroupHierarchies are the mount points of the cgroup v1 hierarchies; the kubelet with its
// cgroupfs driver, and runc, make a cgroup of each pod and container in every one.
func cgroupHierarchies() ([]string, error) {
	mounts, err := mountInfo()
	if err != nil {
		return nil, err
	}
	var hierarchies []string
	for _, m := range mounts {
		if m.fsType == "cgroup" {
			hierarchies = append(hierarchies, m.point)
		}
	}
	if len(hierarchies) == 0 {
		return nil, errors.New("no cgroup v1 hierarchy is mounted: the node runs on cgroup v1 only")
	}
	return hierarchies, nil
}

// unifiedHierarchy is the mount point of the cgroup v2 hierarchy, if one is mounted beside the
// v1 hierarchies (systemd's hybrid layout, /sys/fs/cgroup/unified): the kubelet makes its
// kubepods cgroup there too, which nothing else removes.
func unifiedHierarchy() ([]string, error) {
	mounts, err := mountInfo()
	if err != nil {
		return nil, err
	}
	var unified []string
	for _, m := range mounts {
		if m.fsType == "cgroup2" {
			unified = append(unified, m.point)
		}
	}
	return unified, nil
}

// createNodeCgroup makes the node's cgroup in every hierarchy. A new cpuset cgroup has no
// CPUs or memory nodes, and nothing can join it before it has some: it gets its parent's.
func createNodeCgroup(cgroup string) error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		dir := filepath.Join(h, cgroup)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(h, file))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, file), parent, 0o644); err != nil {
				return fmt.Errorf("cgroup %s: %w", filepath.Join(dir, file), err)
			}
		}
	}
	return nil
}

// joinNodeCgroup moves a process of the node into the node's cgroup (in the hierarchies that
// account for processes), so that everything it starts is found there too.
func joinNodeCgroup(cgroup string, pid int) error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		if base := filepath.Base(h); base != "pids" && base != "freezer" {
			continue
		}
		procs := filepath.Join(h, cgroup, "cgroup.procs")
		if err := os.WriteFile(procs, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving pid %d into %s: %w", pid, procs, err)
		}
	}
	return nil
}

// killCgroup kills every process in the cgroup's tree. The freezer stops them first, so that
// none forks between the listing and the kill.
func killCgroup(hierarchies []string, cgroup string) error {
	freezer := ""
	for _, h := range hierarchies {
		if filepath.Base(h) == "freezer" {
			freezer = filepath.Join(h, cgroup, "freezer.state")
		}
	}
	if freezer != "" {
		if err := os.WriteFile(freezer, []byte("FROZEN"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("freezing the node's processes: %w", err)
		}
		defer func() { _ = os.WriteFile(freezer, []byte("THAWED"), 0o644) }()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids := cgroupProcs(hierarchies, cgroup)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of cgroup %s did not end", pids, cgroup)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if freezer != "" {
			_ = os.WriteFile(freezer, []byte("THAWED"), 0o644)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cgroupProcs lists the pids of every cgroup in the tree, in every hierarchy.
func cgroupProcs(hierarchies []string, cgroup string) []int {
	var pids []int
	for _, h := range hierarchies {
		_ = filepath.WalkDir(filepath.Join(h, cgroup), func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			data, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
			for _, field := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(field); err == nil && !slices.Contains(pids, pid) {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// removeCgroupTree removes a cgroup and its children, deepest first: a cgroup with children
// cannot be removed.
func removeCgroupTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range slices.Backward(dirs) {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// unmountBelow detaches every mount at or below the directories, deepest first: containers'
// root file systems, pods' volumes and network namespaces.
func unmountBelow(dirs ...string) error {
	mounts, err := mountInfo()
	if err != nil {
		return err
	}
	var points []string
	for _, m := range mounts {
		for _, dir := range dirs {
			if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
				points = append(points, m.point)
			}
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range slices.Compact(points) {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

type mount struct{ point, fsType string }

// mountInfo reads this process's mount table.
func mountInfo() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mounts []mount
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		// id parent major:minor root point options [optional fields...] - type source super
		fields := strings.Fields(scanner.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		mounts = append(mounts, mount{point: unescapeMountPath(fields[4]), fsType: fields[sep+1]})
	}
	return mounts, scanner.Err()
}

// unescapeMountPath undoes the octal escapes (\040 for a space) of mountinfo's paths.
func unescapeMountPath(p string) string {
	if !strings.Contains(p, `\`) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+3 < len(p) {
			if n, err := strconv.ParseUint(p[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// deleteBridge removes the pod network's bridge, if it is there.
func deleteBridge(name string) error {
	if _, err := os.Stat(filepath.Join("/sys/class/net", name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if out, err := exec.Command("ip", "link", "delete", name).CombinedOutput(); err != nil {
		return fmt.Errorf("deleting bridge %s: %w: %s", name, err, out)
	}
	return nil
}

// removeAllBut removes everything in dir but the entry keep.
func removeAllBut(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() != keep {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}
