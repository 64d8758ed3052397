package controlplane

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// paths knows where the project's binaries, manifests and local state are.
type paths struct {
	projectDir string
	workDir    string
}

func findPaths(opts Options) (paths, error) {
	dir := opts.ProjectDir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return paths{}, err
		}
		for dir = wd; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				if _, err := os.Stat(filepath.Join(dir, "config")); err == nil {
					break
				}
			}
			if dir == filepath.Dir(dir) {
				return paths{}, fmt.Errorf("no cf-hnc project found above %s", wd)
			}
		}
	}
	work := opts.WorkDir
	switch {
	case work == "":
		work = filepath.Join(dir, ".local")
	case !filepath.IsAbs(work):
		work = filepath.Join(dir, work)
	}
	return paths{projectDir: dir, workDir: work}, nil
}

// prepare creates the work directories and ends processes that an earlier run recorded but
// could not stop (it was killed outright).
func (p paths) prepare() error {
	if err := os.MkdirAll(p.logDir(), 0o755); err != nil {
		return err
	}
	p.reapStale()
	return nil
}

func (p paths) logDir() string  { return filepath.Join(p.workDir, "logs") }
func (p paths) pidFile() string { return filepath.Join(p.workDir, "pids") }
func (p paths) binDir() string  { return filepath.Join(p.projectDir, "bin") }
func (p paths) config(elem ...string) string {
	return filepath.Join(append([]string{p.projectDir, "config"}, elem...)...)
}

// binary returns the path of a tool that `make tools` builds, or says how to get it.
func (p paths) binary(name string) (string, error) {
	path := filepath.Join(p.binDir(), name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s is missing: run `make tools` (it builds %s into %s)", path, name, p.binDir())
	}
	return path, nil
}

// moduleDir returns the directory of a module that go.mod requires, downloading it if needed;
// HNC's and kpack's CRDs and webhook manifests ship in their module zips.
func (p paths) moduleDir(module string) (string, error) {
	return p.moduleDirIn(p.projectDir, module)
}

// moduleDirIn returns the directory of a module that the go.mod of dir requires (a tool's
// wrapper module, hack/tools/<name>, for a module the project's own does not require).
func (p paths) moduleDirIn(dir, module string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating module %s: %w", module, err)
	}
	var info struct{ Dir string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return "", fmt.Errorf("locating module %s: no directory in %q", module, out)
	}
	return info.Dir, nil
}

// recordPID remembers a process this run started, so that a later run can end it if this one
// is killed before it can.
func (p paths) recordPID(name string, pid int) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return
	}
	f, err := os.OpenFile(p.pidFile(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%d %s %s\n", pid, name, exe)
}

// reapStale ends the processes of the pid file whose executable is still the one recorded,
// so that a recycled pid of somebody else's process is never signalled.
func (p paths) reapStale() {
	f, err := os.Open(p.pidFile())
	if err != nil {
		return
	}
	defer os.Remove(p.pidFile())
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) != 3 {
			continue
		}
		pid, err := strconv.Atoi(fields[0])
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == fields[2] {
			fmt.Fprintf(os.Stderr, "controlplane: ending %s (pid %d) left over from an earlier run\n", fields[1], pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// childrenRunning returns the pids of this process's children that run binary; envtest starts
// etcd and kube-apiserver without telling their pids.
func childrenRunning(binary string) []int {
	want, err := filepath.EvalSymlinks(binary)
	if err != nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The fields after the parenthesised command name: state, ppid, ...
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == want {
			pids = append(pids, pid)
		}
	}
	return pids
}

// emptyDir makes dir an empty directory that only its owner may read.
func emptyDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o700)
}
