package registry

import (
	"fmt"
	"maps"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"code.cloudfoundry.org/cf-hnc/internal/cnb"
)

// A stack is a minimal Linux root file system, the same for building and running apps, with
// what the CNB platform asks of a stack (kpack v0.18, pkg/cnb/remote_stack_reader.go; the
// lifecycle's platform spec):
//   - the label io.buildpacks.stack.id on the build and the run image, equal to the
//     ClusterStack's id; CNB_USER_ID and CNB_GROUP_ID in the build image's environment, as
//     integers, and the build user, which kpack runs the build pod as;
//   - the CNB user "cnb" with a home, and a world-writable /tmp;
//   - a POSIX shell and the usual tools (busybox, static, from Debian's busybox-static
//     package), with which Procfile commands run, and CA certificates.
// A run image's fix (a CVE fix of the base) changes its base layer: the patch level in
// /etc/os-release, so that a rebase visibly moves an app's droplet onto new layers.

const (
	// stackID is the id of the seeded stack.
	stackID = "io.buildpacks.stacks.cf-hnc"
	// cnbUserID and cnbGroupID are the CNB user: kpack builds as it, apps run as it.
	cnbUserID  = 1000
	cnbGroupID = 1000
	// distroName and distroVersion are the stack's distribution in /etc/os-release, from which
	// the lifecycle reads a build's target. A fix raises only the patch level.
	distroName    = "cf-hnc"
	distroVersion = "1"
	// caCertificates is where the stack has its CA bundle, taken from this machine's.
	caCertificates = "/etc/ssl/certs/ca-certificates.crt"
)

// stackImage is the build image (build true) or run image of the stack with id; patch is the
// patch level of its base layer, raised for every fixed run image.
func stackImage(shell, id string, build bool, patch int) (v1.Image, error) {
	base, err := stackBase(shell, id, patch)
	if err != nil {
		return nil, err
	}
	role := "run"
	if build {
		role = "build"
	}
	marker, err := tarLayer(file("etc/cf-hnc-stack", 0o644, fmt.Appendf(nil, "stack=%s\nrole=%s\n", id, role)))
	if err != nil {
		return nil, err
	}
	return newImage([]v1.Layer{base, marker}, func(c *v1.Config) {
		c.User = fmt.Sprintf("%d:%d", cnbUserID, cnbGroupID)
		c.Env = append(c.Env,
			"CNB_USER_ID="+strconv.Itoa(cnbUserID),
			"CNB_GROUP_ID="+strconv.Itoa(cnbGroupID),
			"CNB_STACK_ID="+id,
		)
		c.Labels[cnb.StackIDLabel] = id
	})
}

// stackBase is the root file system layer: users, directories, CA certificates, and busybox
// with a link for each of its programs.
func stackBase(shell, id string, patch int) (v1.Layer, error) {
	applets, err := busyboxApplets(shell)
	if err != nil {
		return nil, err
	}
	busybox, err := hostFile("bin/busybox", 0o755, shell)
	if err != nil {
		return nil, fmt.Errorf("the stacks' shell: %w (run `make tools`: hack/node-packages.sh installs busybox-static)", err)
	}
	certs, err := hostFile(strings.TrimPrefix(caCertificates, "/"), 0o644, caCertificates)
	if err != nil {
		return nil, fmt.Errorf("the stacks' CA certificates: %w", err)
	}
	entries := []tarEntry{
		dir("etc", 0o755, 0),
		file("etc/os-release", 0o644, fmt.Appendf(nil,
			"NAME=\"cf-hnc stack\"\nID=%s\nVERSION_ID=%q\nPRETTY_NAME=\"cf-hnc stack %s (patch %d)\"\nPATCH_LEVEL=%d\n", distroName, distroVersion, id, patch, patch)),
		file("etc/passwd", 0o644, fmt.Appendf(nil, "root:x:0:0:root:/root:/bin/sh\ncnb:x:%d:%d:cnb:/home/cnb:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n", cnbUserID, cnbGroupID)),
		file("etc/group", 0o644, fmt.Appendf(nil, "root:x:0:\ncnb:x:%d:\nnogroup:x:65534:\n", cnbGroupID)),
		dir("etc/ssl", 0o755, 0),
		dir("etc/ssl/certs", 0o755, 0),
		certs,
		dir("home", 0o755, 0),
		dir("home/cnb", 0o755, cnbUserID),
		dir("root", 0o700, 0),
		dir("tmp", 0o1777, 0),
		dir("bin", 0o755, 0),
		busybox,
	}
	// Directories before what they hold: sorted, a parent comes before its children.
	dirs := map[string]bool{}
	for _, applet := range applets {
		for d := path.Dir(applet); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	delete(dirs, "bin")
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		entries = append(entries, dir(d, 0o755, 0))
	}
	for _, applet := range applets {
		if applet != "bin/busybox" {
			entries = append(entries, symlink(applet, "/bin/busybox"))
		}
	}
	return tarLayer(entries...)
}

// busyboxApplets lists the paths of busybox's programs ("bin/sh", "usr/bin/env", ...).
func busyboxApplets(shell string) ([]string, error) {
	out, err := exec.Command(shell, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the programs of %s: %w (run `make tools`: hack/node-packages.sh installs busybox-static)", shell, err)
	}
	applets := strings.Fields(string(out))
	slices.Sort(applets)
	return applets, nil
}
