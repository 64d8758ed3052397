package cli

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"code.cloudfoundry.org/cf-hnc/cf"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

func cfBuild(name string, conditions ...metav1.Condition) cfv1alpha1.CFBuild {
	b := cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}}
	for _, c := range conditions {
		c.ObservedGeneration = 1
		b.Status.Conditions = append(b.Status.Conditions, c)
	}
	return b
}

func condition(kind string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: kind, Status: status, Reason: reason, Message: message}
}

var _ = Describe("following a build", func() {
	running := &kpackv1alpha2.Build{ObjectMeta: metav1.ObjectMeta{Name: "app-build-1"}}
	running.Status.StepsCompleted = []string{"prepare", "analyze"}
	steps := []string{"prepare", "analyze", "detect", "restore", "build", "export"}

	DescribeTable("shows the state as the CF API names it, with the reason, and the kpack step while kpack builds",
		func(build cfv1alpha1.CFBuild, kb *kpackv1alpha2.Build, steps []string, want string, finished bool) {
			p := progressOf(&build, kb, steps)
			Expect(p.String()).To(Equal(want))
			Expect(p.finished).To(Equal(finished))
		},
		Entry("not picked up yet", cfBuild("b"), nil, nil, "STAGING  Pending: cf-hnc has not picked the build up yet", false),
		Entry("queued", cfBuild("b",
			condition(cfv1alpha1.StagingCondition, metav1.ConditionFalse, cfv1alpha1.QueuedReason, "builds of app a stage one at a time; waiting for build c"),
			condition(cfv1alpha1.SucceededCondition, metav1.ConditionUnknown, cfv1alpha1.QueuedReason, "builds of app a stage one at a time; waiting for build c")),
			nil, nil, "STAGING  Queued: builds of app a stage one at a time; waiting for build c", false),
		Entry("scheduled: the Staging condition says with what", cfBuild("b",
			condition(cfv1alpha1.StagingCondition, metav1.ConditionTrue, cfv1alpha1.BuildScheduledReason, "waiting for kpack to start a build of Image a with ClusterBuilder cf.default"),
			condition(cfv1alpha1.SucceededCondition, metav1.ConditionUnknown, cfv1alpha1.BuildScheduledReason, "staging")),
			nil, nil, "STAGING  BuildScheduled: waiting for kpack to start a build of Image a with ClusterBuilder cf.default", false),
		Entry("running, the pod's steps known", cfBuild("b",
			condition(cfv1alpha1.SucceededCondition, metav1.ConditionUnknown, cfv1alpha1.BuildRunningReason, "kpack build app-build-1 is running")),
			running, steps, "STAGING  BuildRunning: kpack build app-build-1, step 3/6 (detect)", false),
		Entry("running, the pod's steps not known", cfBuild("b",
			condition(cfv1alpha1.SucceededCondition, metav1.ConditionUnknown, cfv1alpha1.BuildRunningReason, "kpack build app-build-1 is running")),
			running, nil, "STAGING  BuildRunning: kpack build app-build-1, 2 steps done (last: analyze)", false),
		Entry("failed", cfBuild("b",
			condition(cfv1alpha1.SucceededCondition, metav1.ConditionFalse, cfv1alpha1.BuildFailedReason, "kpack build app-build-1 failed")),
			running, steps, "FAILED   BuildFailed: kpack build app-build-1 failed", true),
		Entry("a condition of an older generation is not the end", func() cfv1alpha1.CFBuild {
			b := cfBuild("b", condition(cfv1alpha1.SucceededCondition, metav1.ConditionFalse, cfv1alpha1.BuildFailedReason, "old"))
			b.Generation = 2
			return b
		}(), nil, nil, "STAGING  BuildFailed: old", false),
	)

	It("shows a staged build's droplet", func() {
		build := cfBuild("b", condition(cfv1alpha1.SucceededCondition, metav1.ConditionTrue, cfv1alpha1.BuildSucceededReason, "droplet"))
		build.Status.Droplet = &cfv1alpha1.BuildDropletStatus{Registry: cfv1alpha1.Registry{Image: "r/a@sha256:1"}}
		p := progressOf(&build, running, steps)
		Expect(p.String()).To(Equal("STAGED   BuildSucceeded: droplet r/a@sha256:1"))
		Expect(p.finished).To(BeTrue())
	})

	DescribeTable("says how each step of a build pod ended",
		func(state corev1.ContainerState, want string) { Expect(describeStep(state)).To(Equal(want)) },
		Entry("completed", corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}, "completed"),
		Entry("failed with a message", corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "no go.mod\n"}},
			"exited with code 1: no go.mod"),
		Entry("failed with the end of its log", corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 51,
			Message: "cf-hnc/procfile 1.0.0\nProcfile:1: malformed line\n\x1b[31;1mERROR: \x1b[0mfailed to build: exit status 1\n"}},
			"exited with code 51: ERROR: failed to build: exit status 1"),
		Entry("failed", corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}},
			"exited with code 137 (OOMKilled)"),
		Entry("waiting", corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}, "waiting (PodInitializing)"),
		Entry("not run", corev1.ContainerState{}, "did not run"),
	)
})

var _ = Describe("listing apps and builds", func() {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

	It("lays out an app's builds with lineage, kpack's reasons, short droplet digests and what the app runs", func() {
		staged := condition(cfv1alpha1.SucceededCondition, metav1.ConditionTrue, cfv1alpha1.BuildSucceededReason, "")
		first := cfBuild("first", staged)
		first.CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Minute))
		first.Status.Droplet = &cfv1alpha1.BuildDropletStatus{Registry: cfv1alpha1.Registry{Image: "r/a@sha256:0123456789abcdef"}}
		stack := cfBuild("a-build-2", staged)
		stack.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Minute))
		stack.Labels = map[string]string{cfv1alpha1.RebuildOfLabel: "first", cfv1alpha1.KpackBuildNumberLabel: "2"}
		stack.Annotations = map[string]string{cfv1alpha1.RebuildReasonAnnotation: "STACK"}
		stack.Status.Droplet = &cfv1alpha1.BuildDropletStatus{Registry: cfv1alpha1.Registry{Image: "r/a@sha256:fedcba9876543210"}}
		buildpack := cfBuild("a-build-3", staged)
		buildpack.CreationTimestamp = metav1.NewTime(now.Add(-30 * time.Second))
		buildpack.Labels = map[string]string{cfv1alpha1.RebuildOfLabel: "first", cfv1alpha1.KpackBuildNumberLabel: "3"}
		buildpack.Annotations = map[string]string{cfv1alpha1.RebuildReasonAnnotation: "BUILDPACK"}
		buildpack.Status.Droplet = &cfv1alpha1.BuildDropletStatus{Registry: cfv1alpha1.Registry{Image: "r/a@sha256:aaaabbbbccccdddd"}}
		// Succeeded, but cf-hnc has not recorded the droplet: not staged yet (CFBuild.State).
		unrecorded := cfBuild("a-build-4", staged)
		unrecorded.CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Second))
		failed := cfBuild("later", condition(cfv1alpha1.SucceededCondition, metav1.ConditionFalse, "BuildFailed", ""))
		failed.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Second))
		app := &cfv1alpha1.CFApp{Spec: cfv1alpha1.CFAppSpec{CurrentDropletRef: corev1.LocalObjectReference{Name: "a-build-2"}},
			Status: cfv1alpha1.CFAppStatus{HeldDropletRef: &corev1.LocalObjectReference{Name: "a-build-3"}}}

		Expect(buildRows([]cfv1alpha1.CFBuild{first, stack, buildpack, unrecorded, failed}, app, now)).To(Equal([][]string{
			{"BUILD", "AGE", "STATE", "REASON", "REBUILD OF", "REBUILD REASON", "DROPLET", "RUNS"},
			{"first", "10m", "STAGED", "BuildSucceeded", "-", "-", "sha256:0123456789ab", ""},
			{"a-build-2", "5m", "STAGED", "BuildSucceeded", "first", "STACK", "sha256:fedcba987654", "current"},
			{"a-build-3", "30s", "STAGED", "BuildSucceeded", "first", "BUILDPACK", "sha256:aaaabbbbcccc", "held"},
			{"a-build-4", "10s", "STAGING", "BuildSucceeded", "-", "-", "-", ""},
			{"later", "2s", "FAILED", "BuildFailed", "-", "-", "-", ""},
		}))
	})

	It("orders rebuilds of the same second by kpack's build number", func() {
		second, tenth := cfBuild("z"), cfBuild("a")
		second.Labels = map[string]string{cfv1alpha1.KpackBuildNumberLabel: "2"}
		tenth.Labels = map[string]string{cfv1alpha1.KpackBuildNumberLabel: "10"}
		Expect(byCreation(second, tenth)).To(BeNumerically("<", 0))
	})

	It("lays out apps with their instances per process, droplets, the DropletCurrent reason and a held droplet", func() {
		held := cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Name: "g1"}, Spec: cfv1alpha1.CFAppSpec{DisplayName: "web",
			DesiredState: cfv1alpha1.StartedState, CurrentDropletRef: corev1.LocalObjectReference{Name: "b1"}},
			Status: cfv1alpha1.CFAppStatus{HeldDropletRef: &corev1.LocalObjectReference{Name: "b2"},
				Conditions: []metav1.Condition{condition(cfv1alpha1.DropletCurrentCondition, metav1.ConditionFalse, cfv1alpha1.UpgradeHeldReason, "")}}}
		fresh := cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Name: "g2"}, Spec: cfv1alpha1.CFAppSpec{DisplayName: "api", DesiredState: cfv1alpha1.StoppedState}}
		beat, web := process("g1", "beat", 3, 1), process("g1", "web", 2, 2)
		leaving := process("g1", "clock", 1, 1)
		leaving.DeletionTimestamp = &gone
		Expect(appRows([]cfv1alpha1.CFApp{held, fresh}, []cfv1alpha1.CFProcess{beat, process("other", "web", 1, 1), leaving, web})).To(Equal([][]string{
			{"NAME", "GUID", "STATE", "INSTANCES", "DROPLET", "DROPLET STATUS", "HELD DROPLET"},
			{"web", "g1", "STARTED", "web:2/2,beat:1/3", "b1", "UpgradeHeld", "b2"},
			{"api", "g2", "STOPPED", "-", "-", "Unknown", ""},
		}))
	})
})

var _ = Describe("a space that cannot build", func() {
	t := target{orgName: "acme",
		space: &cfv1alpha1.CFSpace{Spec: cfv1alpha1.CFSpaceSpec{DisplayName: "dev"}}}
	setRegistry := "kubectl cf set-registry acme --server HOST --username USER --password-stdin --droplet-repository PREFIX"

	DescribeTable("is refused with its reason and what ends it",
		func(conditions []metav1.Condition, want string) {
			t.space.Status.Conditions = conditions
			err := checkBuildReady(t)
			if want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(want))
		},
		Entry("BuildReady", []metav1.Condition{condition(cfv1alpha1.BuildReadyCondition, metav1.ConditionTrue, cfv1alpha1.BuildConfigCompleteReason, "")}, ""),
		Entry("not reported yet", nil,
			`space "dev" of org "acme" cannot build: cf-hnc has not reported whether it can yet; this usually passes within seconds: push again in a moment`),
		Entry("no credentials", []metav1.Condition{condition(cfv1alpha1.BuildReadyCondition, metav1.ConditionFalse, cfv1alpha1.RegistryCredentialsMissingReason, "none")},
			`space "dev" of org "acme" cannot build: BuildReady is False (RegistryCredentialsMissing): none; an operator must place the org's registry credentials: `+setRegistry),
		Entry("an invalid repository", []metav1.Condition{condition(cfv1alpha1.BuildReadyCondition, metav1.ConditionFalse, cfv1alpha1.InvalidDropletRepositoryReason, "beside")},
			`space "dev" of org "acme" cannot build: BuildReady is False (InvalidDropletRepository): beside; an operator must correct the droplet repository (a space's own lies within its path below the org's, or outside the org's with the space's own credentials): `+setRegistry),
		Entry("no Builder", []metav1.Condition{condition(cfv1alpha1.BuildReadyCondition, metav1.ConditionFalse, cfv1alpha1.BuilderMissingReason, "none")},
			`space "dev" of org "acme" cannot build: BuildReady is False (BuilderMissing): none; an operator must place a default kpack Builder labelled workloads.cloudfoundry.org/build-config=true in the org or the root namespace`),
		Entry("propagation pending", []metav1.Condition{condition(cfv1alpha1.BuildReadyCondition, metav1.ConditionFalse, cfv1alpha1.PropagationPendingReason, "soon")},
			`space "dev" of org "acme" cannot build: BuildReady is False (PropagationPending): soon; this usually passes within seconds: push again in a moment`),
		Entry("a namespace that needs an operator", []metav1.Condition{
			condition(cfv1alpha1.ReadyCondition, metav1.ConditionFalse, cfv1alpha1.AnchorConflictReason, "namespace dev exists"),
			condition(cfv1alpha1.BuildReadyCondition, metav1.ConditionFalse, cfv1alpha1.NamespaceNotReadyReason, "not ready")},
			`space "dev" of org "acme" cannot build: its namespace needs an operator: False (AnchorConflict): namespace dev exists`),
	)
})

var _ = Describe("packing an app's directory", func() {
	It("packs what .cfignore and the cf CLI's exclusions leave, with the same digest every time", func() {
		dir := GinkgoT().TempDir()
		for name, content := range map[string]string{
			"Procfile": "web: ./app\n", "main.go": "package main\n", "debug.log": "x", "manifest.yml": "x",
			".cfignore": "*.log\ntmp/\n!keep/tmp/\n", ".git/HEAD": "ref", "tmp/a": "x", "keep/tmp/b": "y", "sub/manifest.yml": "x",
		} {
			Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
		}
		Expect(os.Symlink("main.go", filepath.Join(dir, "link"))).To(Succeed())

		packed, err := packSource(dir)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(packed.cleanup)
		Expect(packedEntries(packed.tarFile)).To(Equal([]string{"Procfile", "keep/", "keep/tmp/", "keep/tmp/b", "link -> main.go", "main.go", "sub/"}))
		Expect(packed.String()).To(Equal("4 files, 25 B; 6 left out by .cfignore and the default exclusions"))

		again, err := packSource(dir)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(again.cleanup)
		first, second := digestOf(packed), digestOf(again)
		Expect(first).To(Equal(second))
	})

	It("packs no file that a link took the place of after the walk found it, whether the link leads out of the directory or within it", func() {
		dir := GinkgoT().TempDir()
		for name, content := range map[string]string{"Procfile": "web: ./app\n", "config.json": "{}", "settings.json": "{}"} {
			Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
		}
		kubeconfig := filepath.Join(GinkgoT().TempDir(), "config")
		Expect(os.WriteFile(kubeconfig, []byte("client-key-data: secret"), 0o600)).To(Succeed())
		root, err := os.OpenRoot(dir)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(root.Close)
		var layer bytes.Buffer
		p := &packedSource{dir: dir, root: root, layer: cf.NewSourceLayer(&layer)}

		// swapped returns a file's entry as the walk found it, once a link to target has taken
		// its place, as a co-tenant of a shared workspace would make it while the push packs.
		swapped := func(name, target string) (string, fs.DirEntry) {
			file := filepath.Join(dir, name)
			found, err := os.Lstat(file)
			Expect(err).NotTo(HaveOccurred())
			Expect(os.Remove(file)).To(Succeed())
			Expect(os.Symlink(target, file)).To(Succeed())
			return file, fs.FileInfoToDirEntry(found)
		}
		file, entry := swapped("config.json", kubeconfig)
		Expect(p.add(file, "config.json", entry)).To(MatchError(fmt.Sprintf(`reading %q: path escapes from parent`, file)))
		file, entry = swapped("settings.json", "Procfile")
		Expect(p.add(file, "settings.json", entry)).To(MatchError(
			fmt.Sprintf(`reading %q: it was replaced while it was packed (by a link or another file): nothing is pushed; push again`, file)))
		Expect(layer.String()).NotTo(ContainSubstring("secret"))
		Expect(layer.String()).NotTo(ContainSubstring("web:"))
	})
})

// packedEntries lists a packed layer: names, and links with their targets.
func packedEntries(file string) []string {
	GinkgoHelper()
	f, err := os.Open(file)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	var entries []string
	r := tar.NewReader(f)
	for {
		hdr, err := r.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		Expect(err).NotTo(HaveOccurred())
		Expect(hdr.ModTime.Equal(cf.SourceModTime)).To(BeTrue())
		if hdr.Typeflag == tar.TypeSymlink {
			entries = append(entries, hdr.Name+" -> "+hdr.Linkname)
			continue
		}
		entries = append(entries, hdr.Name)
	}
}

func digestOf(p *packedSource) string {
	GinkgoHelper()
	img, err := cf.SourceImage(p.tarFile)
	Expect(err).NotTo(HaveOccurred())
	digest, err := img.Digest()
	Expect(err).NotTo(HaveOccurred())
	return digest.String()
}
