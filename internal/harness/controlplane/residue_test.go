package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"
)

// These specs make on this machine what a node killed outright leaves (the next run's start,
// startNode, removes it first): they need root and cgroup v1, as the node does.
var _ = Describe("what a killed node leaves", func() {
	var (
		layout  nodeLayout
		network podNetwork
	)

	BeforeEach(func() {
		if os.Geteuid() != 0 {
			Fail("the node's residue is made of cgroups, mounts, a bridge and iptables rules: run as root, as the node runs")
		}
		layout = newNodeLayout(GinkgoT().TempDir())
		network = newPodNetwork(layout)
		DeferCleanup(func() { Expect(removeNodeResidue(layout, network)).To(Succeed()) })
	})

	It("is removed: the processes of its cgroups (a shim's, a container's), mounts, cgroups (the unified hierarchy's too), pod network and state, but the pod logs", func() {
		Expect(createNodeCgroup(layout.cgroup)).To(Succeed())
		hierarchies, err := cgroupHierarchies()
		Expect(err).NotTo(HaveOccurred())
		container := filepath.Join(layout.cgroup, "kubepods", "pod-a", "container-a")
		for _, h := range hierarchies {
			Expect(os.MkdirAll(filepath.Join(h, container), 0o755)).To(Succeed())
		}
		shim, containerProcess := orphanLike(layout.cgroup), orphanLike(container)

		mounts := []string{
			filepath.Join(layout.kubeletDir(), "pods", "pod-a", "volumes", "token"),
			filepath.Join(layout.runDir, "netns", "cni-a"),
		}
		for _, m := range mounts {
			Expect(os.MkdirAll(m, 0o755)).To(Succeed())
			Expect(unix.Mount("tmpfs", m, "tmpfs", 0, "size=1m")).To(Succeed())
		}
		Expect(network.create(filepath.Join(layout.dir, "cni"), filepath.Join(layout.dir, "cni-ipam"))).To(Succeed())
		Expect(network.forward(network.host, 5000, 5000)).To(Succeed())
		unified, err := unifiedHierarchy()
		Expect(err).NotTo(HaveOccurred())
		for _, h := range unified {
			// The kubelet's own cgroup there, which it never removes.
			Expect(os.MkdirAll(filepath.Join(h, layout.cgroup, "kubepods"), 0o755)).To(Succeed())
		}
		podLog := filepath.Join(layout.dir, "pod-logs", "space_pod-a", "build", "0.log")
		Expect(os.MkdirAll(filepath.Dir(podLog), 0o755)).To(Succeed())
		Expect(os.WriteFile(podLog, []byte("Saving...\n"), 0o644)).To(Succeed())
		Expect(os.WriteFile(layout.kubeletConfig(), []byte("kind: KubeletConfiguration\n"), 0o644)).To(Succeed())

		Expect(removeNodeResidue(layout, network)).To(Succeed())

		Eventually(shim).Should(Receive(ContainSubstring("killed")))
		Eventually(containerProcess).Should(Receive(ContainSubstring("killed")))
		Expect(mountInfo()).NotTo(ContainElement(WithTransform(func(m mount) string { return m.point }, Or(
			HavePrefix(layout.dir+"/"), HavePrefix(layout.runDir+"/")))))
		for _, h := range append(hierarchies, unified...) {
			Expect(filepath.Join(h, layout.cgroup)).NotTo(BeADirectory())
		}
		Expect(filepath.Join("/sys/class/net", layout.bridge)).NotTo(BeAnExistingFile())
		for _, table := range []string{"nat", "filter"} {
			rules, err := exec.Command("iptables", "-w", "5", "-t", table, "-S").CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(rules))
			Expect(string(rules)).NotTo(ContainSubstring(network.chain), "no chain of the network, nor a jump to one, in %s", table)
		}
		Expect(layout.runDir).NotTo(BeAnExistingFile())
		Expect(os.ReadDir(layout.dir)).To(HaveExactElements(HaveField("Name()", "pod-logs")))
		Expect(os.ReadFile(podLog)).To(Equal([]byte("Saving...\n")))
	})

	It("is nothing when nothing is left", func() {
		Expect(removeNodeResidue(layout, network)).To(Succeed())
		Expect(removeNodeResidue(layout, network)).To(Succeed())
	})
})

// orphanLike starts a process in a session of its own, as a containerd shim or a container runs
// after the process that started it is gone, and moves it into cgroup. The channel receives
// how it ended.
func orphanLike(cgroup string) <-chan string {
	GinkgoHelper()
	cmd := exec.Command("/bin/sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	Expect(cmd.Start()).To(Succeed())
	Expect(joinNodeCgroup(cgroup, cmd.Process.Pid)).To(Succeed())
	ended := make(chan string, 1)
	go func() { ended <- fmt.Sprint(cmd.Wait()) }()
	DeferCleanup(func() { _ = cmd.Process.Kill() })
	Consistently(ended, 200*time.Millisecond).ShouldNot(Receive(), "it runs until the residue goes")
	return ended
}
