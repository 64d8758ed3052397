package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestControlPlane(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "controlplane (unit)")
}

var _ = Describe("a component", func() {
	var logDir string

	BeforeEach(func() { logDir = GinkgoT().TempDir() })

	It("names itself, its log file and the log's last lines when it dies", func() {
		c, err := startComponent("kpack-controller", logDir, "/bin/sh", []string{"-c", "echo starting; echo 'fatal: no ClusterLifecycle'; exit 3"}, nil)
		Expect(err).NotTo(HaveOccurred())
		Eventually(c.alive, 5*time.Second).Should(MatchError(And(
			ContainSubstring("kpack-controller exited unexpectedly (exit status 3)"),
			ContainSubstring("see "+filepath.Join(logDir, "kpack-controller.log")),
			ContainSubstring("fatal: no ClusterLifecycle"))))
	})

	It("says which readiness check it failed, and where its log is", func() {
		c, err := startComponent("hnc-manager", logDir, "/bin/sh", []string{"-c", "echo waiting; exec sleep 60"}, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.stop, time.Second)
		err = c.waitUntil(context.Background(), 300*time.Millisecond, "ready", httpOK("http://127.0.0.1:1/readyz"))
		Expect(err).To(MatchError(And(
			ContainSubstring("hnc-manager did not become ready within 300ms"),
			ContainSubstring("hnc-manager.log"),
			ContainSubstring("waiting"))))
	})

	It("stops its whole process group", func() {
		c, err := startComponent("etcd", logDir, "/bin/sh", []string{"-c", "sleep 60 & echo $! > " + filepath.Join(logDir, "child") + "; wait"}, nil)
		Expect(err).NotTo(HaveOccurred())
		var child []byte
		Eventually(func() ([]byte, error) {
			child, err = os.ReadFile(filepath.Join(logDir, "child"))
			return child, err
		}).ShouldNot(BeEmpty())
		c.stop(5 * time.Second)
		Expect(c.alive()).To(HaveOccurred())
		Eventually(func() bool {
			_, err := os.Stat("/proc/" + string(child[:len(child)-1]))
			return os.IsNotExist(err)
		}, 5*time.Second).Should(BeTrue(), "the child of the component is gone")
	})
})
