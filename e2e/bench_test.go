package e2e_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/gomega/gexec"
	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/harness/registry"
)

// The benchmarks measure the numbers that the design record (docs/adr) quotes. `make bench`
// runs each once; each starts its own local control plane.

// BenchmarkBuildConfigReachesSpaces places an org's registry credentials once and measures
// until every one of its spaces can build, then how long a new space takes, and how many
// namespaces hold a copy of the org's credentials.
func BenchmarkBuildConfigReachesSpaces(b *testing.B) {
	const spaces = 100
	bench := startBench(b, "reach", controlplane.Options{Kpack: true, DefaultBuilder: true})
	for range b.N {
		org := bench.org(b, "reach-"+string(uuid.NewUUID())[:8])
		names := bench.spaces(b, org, spaces)

		start := time.Now()
		bench.placeOrgRegistry(b, org)
		bench.waitFor(b, 5*time.Minute, "every space BuildReady", func() bool { return bench.buildReady(b, org) == spaces })
		b.ReportMetric(time.Since(start).Seconds(), "s/100-spaces-build-ready")

		start = time.Now()
		space := bench.spaces(b, org, 1)[0]
		bench.waitFor(b, time.Minute, "the new space BuildReady", func() bool { return bench.buildReady(b, org) == spaces+1 })
		b.ReportMetric(time.Since(start).Seconds(), "s/new-space-build-ready")

		copies := 0
		for _, ns := range append(append(names, space), org) {
			if bench.get(b, ns, "cf-registry-org", &corev1.Secret{}) {
				copies++
			}
		}
		b.ReportMetric(float64(copies), "namespaces-holding-org-credentials")
	}
}

// BenchmarkStackUpdate counts the image manifests written to the registry for one stack run
// image update, for the root's default Builder propagated by HNC to 5 orgs of 10 spaces, and
// for one ClusterBuilder; and measures until every Builder is on the new run image. kpack
// writes, per Builder, the builder image and a copy of the run image, each under two tags.
func BenchmarkStackUpdate(b *testing.B) {
	bench := startBench(b, "stack", controlplane.Options{Kpack: true, DefaultBuilder: true})
	for o := range 5 {
		bench.spaces(b, bench.org(b, fmt.Sprintf("stack-%d", o)), 10)
	}
	clusterBuilder := bench.clusterBuilder(b)
	builders := func() []kpackv1alpha2.Builder {
		list := &kpackv1alpha2.BuilderList{}
		bench.must(b, bench.k8s.List(b.Context(), list, client.MatchingLabels{cfv1alpha1.BuildConfigLabel: "true"}))
		return list.Items
	}
	bench.waitFor(b, 5*time.Minute, "every Builder Ready", func() bool {
		ready := 0
		for _, builder := range builders() {
			if builder.Status.LatestImage != "" {
				ready++
			}
		}
		return ready == 1+5+5*10
	})
	b.ReportMetric(float64(len(builders())), "propagated-builders")
	reg := bench.cp.Kpack().Registry
	for range b.N {
		propagated, cluster := reg.ManifestsPushed(controlplane.BuilderRepository), reg.ManifestsPushed(clusterBuilderRepository)
		start := time.Now()
		runImage, err := bench.cp.UpgradeRunImage(b.Context())
		bench.must(b, err)
		onNewRunImage := func(status kpackv1alpha2.BuilderStatus) bool {
			return strings.HasSuffix(status.Stack.RunImage, runImage.Digest)
		}
		bench.waitFor(b, 5*time.Minute, "every Builder on the new run image", func() bool {
			for _, builder := range builders() {
				if !onNewRunImage(builder.Status) {
					return false
				}
			}
			bench.must(b, bench.k8s.Get(b.Context(), client.ObjectKeyFromObject(clusterBuilder), clusterBuilder))
			return onNewRunImage(clusterBuilder.Status)
		})
		b.ReportMetric(time.Since(start).Seconds(), "s/all-builders-updated")
		b.ReportMetric(float64(reg.ManifestsPushed(controlplane.BuilderRepository)-propagated), "manifests-written/propagated-builder")
		b.ReportMetric(float64(reg.ManifestsPushed(clusterBuilderRepository)-cluster), "manifests-written/cluster-builder")
	}
}

// BenchmarkTree measures `kubectl cf tree` over 1,000 spaces in 10 orgs, and the cf-hnc
// manager's peak memory after reconciling them.
func BenchmarkTree(b *testing.B) {
	const orgs, spacesPerOrg = 10, 100
	bench := startBench(b, "tree", controlplane.Options{})
	start := time.Now()
	for o := range orgs {
		bench.spaces(b, bench.org(b, fmt.Sprintf("tree-%d", o)), spacesPerOrg)
	}
	spacesReady := time.Since(start)
	kubectlCF, err := gexec.Build("code.cloudfoundry.org/cf-hnc/cmd/kubectl-cf")
	bench.must(b, err)
	b.ResetTimer()
	for range b.N {
		out, err := exec.Command(kubectlCF, "tree", "--kubeconfig", bench.cp.Kubeconfig).CombinedOutput()
		if err != nil {
			b.Fatalf("kubectl cf tree: %v\n%s", err, out)
		}
		if rows := strings.Count(string(out), "\n"); rows != 1+orgs+orgs*spacesPerOrg {
			b.Fatalf("kubectl cf tree printed %d rows, not %d", rows, 1+orgs+orgs*spacesPerOrg)
		}
	}
	b.StopTimer()
	// Reported after the loop: ResetTimer drops metrics reported before it.
	b.ReportMetric(spacesReady.Seconds(), "s/1000-spaces-ready")
	b.ReportMetric(bench.managerPeakRSS(b), "MiB-manager-peak-rss")
}

const clusterBuilderRepository = "cnb/builders/cluster"

// bench is a local control plane for one benchmark, with cf-hnc's manager as a process.
type bench struct {
	cp  *controlplane.ControlPlane
	k8s client.Client
	// notReady says why a space could not build, when one could not.
	notReady string
}

func startBench(b *testing.B, name string, opts controlplane.Options) *bench {
	b.Helper()
	manager, err := gexec.Build("code.cloudfoundry.org/cf-hnc")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(gexec.CleanupBuildArtifacts)
	ctrl.SetLogger(logr.Discard())
	opts.WorkDir = ".local/bench-" + name
	opts.ControllerManager, opts.HNC, opts.Manager = true, true, manager
	cp, err := controlplane.Start(b.Context(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cp.Stop)
	return &bench{cp: cp, k8s: cp.Client}
}

func (bn *bench) must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// waitFor polls until done, or fails the benchmark after timeout.
func (bn *bench) waitFor(b *testing.B, timeout time.Duration, what string, done func() bool) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for !done() {
		if time.Now().After(deadline) {
			b.Fatalf("not %s after %s (%s); the logs are in %s", what, timeout, bn.notReady, bn.cp.LogDir())
		}
		if err := bn.cp.Healthy(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (bn *bench) get(b *testing.B, namespace, name string, obj client.Object) bool {
	err := bn.k8s.Get(b.Context(), client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if client.IgnoreNotFound(err) != nil {
		b.Fatal(err)
	}
	return err == nil
}

// org creates a Ready org and returns its GUID.
func (bn *bench) org(b *testing.B, name string) string {
	org := &cfv1alpha1.CFOrg{
		ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.RootNamespace, Name: string(uuid.NewUUID())},
		Spec:       cfv1alpha1.CFOrgSpec{DisplayName: name},
	}
	bn.must(b, bn.k8s.Create(b.Context(), org))
	bn.waitFor(b, time.Minute, "org Ready", func() bool {
		bn.get(b, org.Namespace, org.Name, org)
		return meta.IsStatusConditionTrue(org.Status.Conditions, cfv1alpha1.ReadyCondition)
	})
	return org.Name
}

// spaces creates n spaces in an org, waits until all are Ready and returns their GUIDs.
func (bn *bench) spaces(b *testing.B, org string, n int) []string {
	names := make([]string, n)
	for i := range names {
		space := &cfv1alpha1.CFSpace{
			ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: string(uuid.NewUUID())},
			Spec:       cfv1alpha1.CFSpaceSpec{DisplayName: "space-" + string(uuid.NewUUID())[:8]},
		}
		bn.must(b, bn.k8s.Create(b.Context(), space))
		names[i] = space.Name
	}
	bn.waitFor(b, 5*time.Minute, "spaces Ready", func() bool {
		list := &cfv1alpha1.CFSpaceList{}
		bn.must(b, bn.k8s.List(b.Context(), list, client.InNamespace(org)))
		ready := 0
		for _, s := range list.Items {
			if meta.IsStatusConditionTrue(s.Status.Conditions, cfv1alpha1.ReadyCondition) {
				ready++
			}
		}
		return ready == len(list.Items)
	})
	return names
}

// buildReady counts the spaces of an org that can build, and logs why the others cannot.
func (bn *bench) buildReady(b *testing.B, org string) int {
	list := &cfv1alpha1.CFSpaceList{}
	bn.must(b, bn.k8s.List(b.Context(), list, client.InNamespace(org)))
	ready := 0
	for _, s := range list.Items {
		c := meta.FindStatusCondition(s.Status.Conditions, cfv1alpha1.BuildReadyCondition)
		if c != nil && c.Status == metav1.ConditionTrue {
			ready++
		} else if c != nil {
			bn.notReady = fmt.Sprintf("space %s: %s: %s", s.Name, c.Reason, c.Message)
		}
	}
	return ready
}

// placeOrgRegistry is the operator's once-per-org step, as `kubectl cf set-registry` does it.
func (bn *bench) placeOrgRegistry(b *testing.B, org string) {
	password := string(uuid.NewUUID())
	reg := bn.cp.Kpack().Registry
	bn.must(b, reg.AddUser(registry.User{Name: "user-" + org, Password: password, Prefixes: []string{org + "/"}}))
	labels := map[string]string{cfv1alpha1.BuildConfigLabel: "true"}
	bn.must(b, bn.k8s.Create(b.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "cf-registry-org", Labels: labels,
			Annotations: map[string]string{cfv1alpha1.DropletRepositoryPrefixAnnotation: reg.Host() + "/" + org}},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: controlplane.DockerConfig(reg.Host(), "user-"+org, password)},
	}))
	bn.must(b, bn.k8s.Create(b.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "cf-build-org", Labels: labels}}))
}

// clusterBuilder makes the alternative to a propagated Builder: one ClusterBuilder with the
// root's credentials, Ready.
func (bn *bench) clusterBuilder(b *testing.B) *kpackv1alpha2.ClusterBuilder {
	builder := bn.cp.Kpack().Builder("", "cluster-default", "", bn.cp.Kpack().Registry.Host()+"/"+clusterBuilderRepository)
	cb := &kpackv1alpha2.ClusterBuilder{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-default"},
		Spec: kpackv1alpha2.ClusterBuilderSpec{
			BuilderSpec:       builder.Spec.BuilderSpec,
			ServiceAccountRef: corev1.ObjectReference{Namespace: controlplane.RootNamespace, Name: "cf-build-root"},
		},
	}
	bn.must(b, bn.k8s.Create(b.Context(), cb))
	bn.waitFor(b, time.Minute, "ClusterBuilder Ready", func() bool {
		bn.get(b, "", cb.Name, cb)
		return cb.Status.LatestImage != ""
	})
	return cb
}

// managerPeakRSS reads the cf-hnc manager's peak resident memory from /proc.
func (bn *bench) managerPeakRSS(b *testing.B) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", bn.cp.ManagerPID()))
	bn.must(b, err)
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if value, ok := strings.CutPrefix(scanner.Text(), "VmHWM:"); ok {
			kib, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")))
			bn.must(b, err)
			return float64(kib) / 1024
		}
	}
	b.Fatal("no VmHWM in /proc status")
	return 0
}
