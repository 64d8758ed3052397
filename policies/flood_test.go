package policies_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/metrics"
)

// hncMemoryLimit is the HNC manager's memory limit in its release manifest (config/manager/
// manager.yaml of sigs.k8s.io/hierarchical-namespaces v1.1.0).
const hncMemoryLimit = 300 << 20

// spaceBound is what docs/security.md computes that one space holds at most of what HNC caches
// (Secrets, ServiceAccounts, RoleBindings), as the apiserver serves it, under the default quotas
// and the bounds.
const spaceBound = 1600 << 10

// orgNamespaces is how many namespaces one org holds under the default quotas: its own and
// count/cfspaces spaces. An org manager may bind itself any space role in each of them.
const orgNamespaces = 21

var _ = Describe("A hostile space at its quota", Ordered, func() {
	var org, space string

	BeforeAll(func(ctx SpecContext) {
		org = createOrg(ctx)
		space = createSpace(ctx, org)
	})

	It("holds what HNC can hold, and HNC goes on copying the quotas into another org's new space", func(ctx SpecContext) {
		before := hncMemory(ctx)
		dev, mgr := spaceDeveloper(ctx, org, space), spaceManager(ctx, org, space)

		By("filling the space with the largest Secrets, ConfigMaps, ServiceAccounts and RoleBindings that the bounds allow, until the quota refuses")
		counts := map[string]int{}
		counts["Secrets"] = flood(ctx, dev, spaceQuota, "count/secrets", func(i int) client.Object {
			return &corev1.Secret{ObjectMeta: maximalMeta(space, fmt.Sprintf("s%03d", i), maxMetadataBytes), Data: maximalData()}
		})
		counts["ConfigMaps"] = flood(ctx, dev, spaceQuota, "count/configmaps", func(i int) client.Object {
			data := map[string]string{}
			for k, v := range maximalData() {
				data[k] = string(v)
			}
			return &corev1.ConfigMap{ObjectMeta: maximalMeta(space, fmt.Sprintf("c%03d", i), maxMetadataBytes), Data: data}
		})
		counts["ServiceAccounts"] = flood(ctx, dev, spaceQuota, "count/serviceaccounts", func(i int) client.Object {
			sa := &corev1.ServiceAccount{ObjectMeta: maximalMeta(space, fmt.Sprintf("a%03d", i), maxMetadataBytes)}
			for j := range maxServiceAccountRef {
				sa.Secrets = append(sa.Secrets, corev1.ObjectReference{Name: longName(j)})
				sa.ImagePullSecrets = append(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: longName(j)})
			}
			return sa
		})
		counts["RoleBindings"] = flood(ctx, mgr, orgQuota, "count/rolebindings.rbac.authorization.k8s.io", func(i int) client.Object {
			b := &rbacv1.RoleBinding{ObjectMeta: maximalMeta(space, fmt.Sprintf("b%03d", i), maxMetadataBytes),
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cf-space-auditor"}}
			for j := range maxSubjects {
				b.Subjects = append(b.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind,
					Name: fmt.Sprintf("%03d-%s", j, strings.Repeat("u", maxSubjectName-4))})
			}
			return b
		})

		By("weighing what the space holds, as the apiserver serves it to HNC's watches")
		held := map[string]int{}
		for kind, list := range map[string]client.ObjectList{"Secrets": &corev1.SecretList{}, "ServiceAccounts": &corev1.ServiceAccountList{},
			"RoleBindings": &rbacv1.RoleBindingList{}, "ConfigMaps": &corev1.ConfigMapList{}} {
			Expect(k8s.List(ctx, list, client.InNamespace(space))).To(Succeed())
			held[kind] = weigh(list)
		}
		cached := held["Secrets"] + held["ServiceAccounts"] + held["RoleBindings"]
		AddReportEntry("flood", fmt.Sprintf("objects made: %v; bytes held: %v; HNC's kinds: %d bytes", counts, held, cached))
		Expect(cached).To(BeNumerically("<=", spaceBound), "the space holds no more of what HNC caches than docs/security.md computes")

		By("HNC, which caches them, still under its limit and copying quotas into another org's new space")
		otherSpace := createSpace(ctx, createOrg(ctx))
		Expect(inForce(ctx, otherSpace, spaceQuota)()).NotTo(BeEmpty())
		flooded := hncMemory(ctx)
		By("waiting for a garbage collection of HNC's after the flood (Go forces one every two minutes), to read what it keeps")
		var after memory
		Eventually(func() int64 {
			after = hncMemory(ctx)
			return after.collections
		}, 3*time.Minute, 5*time.Second).Should(BeNumerically(">", flooded.collections))
		AddReportEntry("HNC memory", fmt.Sprintf("resident %d MiB before, %d MiB after; live heap at the last collection %d MiB before, %d MiB after",
			before.rss>>20, after.rss>>20, before.live>>20, after.live>>20))
		Expect(after.rss).To(BeNumerically("<", hncMemoryLimit), "HNC's resident memory under its release's limit")
		Expect(before.rss+orgNamespaces*(after.live-before.live)).To(BeNumerically("<", hncMemoryLimit),
			"HNC holds a whole org of such spaces within its limit")
	})
})

// flood creates objects as c until the quota refuses one for its count, and returns how many it
// made; every refusal but the quota's fails the spec (the objects are within every bound).
func flood(ctx context.Context, c client.Client, quota string, counted corev1.ResourceName, object func(i int) client.Object) int {
	GinkgoHelper()
	for i := 0; ; i++ {
		err := c.Create(ctx, object(i))
		if err != nil {
			Expect(err).To(refusedWith("exceeded quota: "+quota, "limited: "+string(counted)), "object %d", i)
			return i
		}
		Expect(i).To(BeNumerically("<", 1000), "the quota refuses before")
	}
}

// maximalMeta is metadata at the bounds: 32 labels with values of 63 characters, and 32
// annotations that fill the rest of limit bytes of keys and values.
func maximalMeta(namespace, name string, limit int) metav1.ObjectMeta {
	meta := metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}
	used := 0
	for i := range maxLabels {
		key := fmt.Sprintf("example.org/l%02d", i)
		meta.Labels[key] = strings.Repeat("v", 63)
		used += len(key) + 63
	}
	each := (limit - used) / maxAnnotations
	for i := range maxAnnotations {
		key := fmt.Sprintf("example.org/a%02d", i)
		meta.Annotations[key] = strings.Repeat("a", each-len(key))
	}
	return meta
}

// maximalData is 32 keys of 512 bytes of key and value: 16 KiB.
func maximalData() map[string][]byte {
	data := map[string][]byte{}
	for i := range maxDataKeys {
		key := fmt.Sprintf("k%02d", i)
		data[key] = []byte(strings.Repeat("d", maxDataBytes/maxDataKeys-len(key)))
	}
	return data
}

// longName is a name of 253 characters.
func longName(i int) string { return fmt.Sprintf("%03d-%s", i, strings.Repeat("n", 249)) }

// weigh is the size in JSON of a list's items, as a watch sends them.
func weigh(list client.ObjectList) int {
	GinkgoHelper()
	data, err := json.Marshal(list)
	Expect(err).NotTo(HaveOccurred())
	return len(data)
}

// memory is what HNC's metrics say of its memory: its resident memory, the heap that was live
// at its last garbage collection (half the heap size at which the next one starts, with Go's
// default GOGC of 100), and how many collections it made.
type memory struct{ rss, live, collections int64 }

// hncMemory reads the HNC manager's memory from its metrics.
func hncMemory(ctx context.Context) memory {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	address, err := cp.HNCMetrics(ctx)
	Expect(err).NotTo(HaveOccurred())
	families, err := metrics.ScrapeURL(ctx, http.DefaultClient, "http://"+address+"/metrics", nil)
	Expect(err).NotTo(HaveOccurred())
	gauge := func(name string) int64 {
		Expect(families).To(HaveKey(name))
		return int64(families[name].GetMetric()[0].GetGauge().GetValue())
	}
	Expect(families).To(HaveKey("go_gc_duration_seconds"))
	return memory{rss: gauge("process_resident_memory_bytes"), live: gauge("go_memstats_next_gc_bytes") / 2,
		collections: int64(families["go_gc_duration_seconds"].GetMetric()[0].GetSummary().GetSampleCount())}
}
