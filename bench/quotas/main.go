// Command quotas measures what CF quotas cost on the local control plane (docs/adr/0011): the
// ResourceQuota of config/samples/space_quota.yaml placed once in an org, which HNC copies into
// every space and the apiserver enforces there, against HNC v1.1.0's HierarchicalResourceQuota
// as HNC ships it (its hrq variant: the manager with --enable-hrq, and the variant's two
// webhooks). It runs the control plane of make run, and prints a Markdown section for
// docs/benchmarks.md.
//
//	go run ./bench/quotas -spaces 100
//
// Run it alone: it starts a whole control plane (under the e2e lock when others share the
// machine).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"
	"sigs.k8s.io/yaml"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/metrics"
)

const (
	workDir = ".local/bench-quotas"
	// hrqSingleton is the ResourceQuota that HNC's HRQ reconciler writes into every namespace
	// below a HierarchicalResourceQuota, with the strictest limits above it.
	hrqSingleton = "hrq." + hncv1alpha2.MetaGroup
	// hrqWebhooks is the HRQ variant's webhook patch in HNC's module.
	hrqWebhooks = "config/variants/hrq/webhook_patch.yaml"
)

type config struct {
	spaces, newSpaces, creates int
}

func main() {
	var cfg config
	flag.IntVar(&cfg.spaces, "spaces", 100, "Spaces in each measured org before its quota is placed.")
	flag.IntVar(&cfg.newSpaces, "new-spaces", 20, "Spaces created one at a time in each org once its quota is in force.")
	flag.IntVar(&cfg.creates, "creates", 50, "Secrets and CFApps created one at a time in each measured space (within the sample's limits).")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(false)))
	command := strings.Join(append([]string{"go run ./bench/quotas"}, os.Args[1:]...), " ")
	if err := run(ctx, cfg, command); err != nil {
		fmt.Fprintln(os.Stderr, "quotas:", err)
		os.Exit(1)
	}
}

// run is one measurement: ResourceQuotas first, then HNC restarted with HRQ.
func run(ctx context.Context, cfg config, command string) error {
	say("starting the local control plane (logs in " + workDir + "/logs)")
	cp, err := controlplane.Start(ctx, controlplane.Options{
		WorkDir: workDir, ControllerManager: true, HNC: true, Node: true, Kpack: true, DefaultBuilder: true, CFHNC: true,
	})
	if err != nil {
		return err
	}
	defer cp.Stop()
	m := &measure{cfg: cfg, cp: cp, k8s: cp.Client}
	r := &results{command: command, spaces: cfg.spaces}

	plain, err := m.orgWithSpaces(ctx, "plain", 1)
	if err != nil {
		return err
	}
	quotaOrg, err := m.orgWithSpaces(ctx, "quota", cfg.spaces)
	if err != nil {
		return err
	}
	hrqOrg, err := m.orgWithSpaces(ctx, "hrq", cfg.spaces)
	if err != nil {
		return err
	}
	if r.hncBefore, err = m.hncMemory(ctx); err != nil {
		return err
	}

	say("placing the sample space quota in an org of " + fmt.Sprint(cfg.spaces) + " spaces")
	sample, err := sampleQuota(quotaOrg.name)
	if err != nil {
		return err
	}
	if r.rqPlaced, err = m.place(ctx, sample, quotaOrg, sample.Name); err != nil {
		return err
	}
	if r.hncAfterRQ, err = m.hncMemory(ctx); err != nil {
		return err
	}
	if r.rqNewSpaces, r.plainNewSpaces, err = m.newSpaces(ctx, quotaOrg, plain, sample.Name); err != nil {
		return err
	}
	if r.rqCreates, r.plainCreates, err = m.creates(ctx, quotaOrg.spaces[0], plain.spaces[0]); err != nil {
		return err
	}

	say("restarting HNC as its hrq variant runs it")
	if err := m.restartHNCWithHRQ(ctx); err != nil {
		return err
	}
	// An HRQ bounds the sum over the org: the same room as the sample in each namespace.
	hrq := &hncv1alpha2.HierarchicalResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: hrqOrg.name, Name: "cf-org-hrq"},
		Spec: hncv1alpha2.HierarchicalResourceQuotaSpec{Hard: times(sample.Spec.Hard, 1+cfg.spaces+cfg.newSpaces)}}
	if r.hrqPlaced, err = m.place(ctx, hrq, hrqOrg, hrqSingleton); err != nil {
		return err
	}
	if r.hncAfterHRQ, err = m.hncMemory(ctx); err != nil {
		return err
	}
	if r.hrqNewSpaces, r.plainNewSpacesHRQ, err = m.newSpaces(ctx, hrqOrg, plain, hrqSingleton); err != nil {
		return err
	}
	if r.hrqCreates, r.plainCreatesHRQ, err = m.creates(ctx, hrqOrg.spaces[0], plain.spaces[0]); err != nil {
		return err
	}
	fmt.Print(r.markdown())
	return nil
}

// measure is one run on one control plane.
type measure struct {
	cfg config
	cp  *controlplane.ControlPlane
	k8s client.Client
	// hncMetrics is where the running HNC serves its metrics.
	hncMetrics string
}

// org is an org with its spaces' GUIDs.
type org struct {
	name   string
	spaces []string
}

// orgWithSpaces creates an org with its registry credentials and build ServiceAccount (what
// HNC copies into every space) and n spaces, and waits until HNC has copied them into each.
func (m *measure) orgWithSpaces(ctx context.Context, name string, n int) (*org, error) {
	say(fmt.Sprintf("creating org %s with %d spaces", name, n))
	o := &org{}
	guid, err := m.createOrg(ctx, name)
	if err != nil {
		return nil, err
	}
	o.name = guid
	for range n {
		space := string(uuid.NewUUID())
		if err := m.k8s.Create(ctx, newSpace(guid, space)); err != nil {
			return nil, err
		}
		o.spaces = append(o.spaces, space)
	}
	for _, space := range o.spaces {
		if err := poll(ctx, 5*time.Minute, func() bool { return m.exists(ctx, space, "cf-registry-org", &corev1.Secret{}) }); err != nil {
			return nil, fmt.Errorf("org %s: space %s has no copy of the org's credentials: %w", name, space, err)
		}
	}
	return o, nil
}

func (m *measure) createOrg(ctx context.Context, name string) (string, error) {
	org := &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.RootNamespace, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFOrgSpec{DisplayName: name}}
	if err := m.k8s.Create(ctx, org); err != nil {
		return "", err
	}
	if err := poll(ctx, time.Minute, func() bool {
		return m.k8s.Get(ctx, client.ObjectKeyFromObject(org), org) == nil && meta.IsStatusConditionTrue(org.Status.Conditions, cfv1alpha1.ReadyCondition)
	}); err != nil {
		return "", fmt.Errorf("org %s not Ready: %w", name, err)
	}
	reg := m.cp.Kpack().Registry
	account := controlplane.OrgsRepository + "/" + org.Name
	labels := map[string]string{cfv1alpha1.BuildConfigLabel: "true"}
	for _, obj := range []client.Object{
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: org.Name, Name: "cf-registry-org", Labels: labels,
				Annotations: map[string]string{cfv1alpha1.DropletRepositoryPrefixAnnotation: reg.Host() + "/" + account}},
			Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: controlplane.DockerConfig(reg.Host(), account, m.cp.Kpack().TenantPassword)},
		},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: org.Name, Name: "cf-build-org", Labels: labels}},
	} {
		if err := m.k8s.Create(ctx, obj); err != nil {
			return "", err
		}
	}
	return org.Name, nil
}

func newSpace(org, guid string) *cfv1alpha1.CFSpace {
	return &cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: guid},
		Spec: cfv1alpha1.CFSpaceSpec{DisplayName: "space-" + guid[:8]}}
}

// sampleQuota is config/samples/space_quota.yaml, placed in an org.
func sampleQuota(org string) (*corev1.ResourceQuota, error) {
	data, err := os.ReadFile("config/samples/space_quota.yaml")
	if err != nil {
		return nil, err
	}
	quota := &corev1.ResourceQuota{}
	if err := yaml.UnmarshalStrict(data, quota); err != nil {
		return nil, fmt.Errorf("config/samples/space_quota.yaml: %w", err)
	}
	quota.Namespace = org
	return quota, nil
}

// placement is how long a quota placed once in an org took to reach every namespace of it.
type placement struct {
	namespaces       int
	copied, enforced time.Duration
}

// place creates a quota in an org and waits until the ResourceQuota named enforcing (a copy,
// or HRQ's singleton) is in every namespace of the org, and then until the apiserver enforces
// each: kube-controller-manager has computed its usage.
func (m *measure) place(ctx context.Context, quota client.Object, o *org, enforcing string) (placement, error) {
	namespaces := append([]string{o.name}, o.spaces...)
	start := time.Now()
	if err := m.k8s.Create(ctx, quota); err != nil {
		return placement{}, err
	}
	p := placement{namespaces: len(namespaces)}
	if err := poll(ctx, 10*time.Minute, func() bool { return m.countQuotas(ctx, namespaces, enforcing, false) == len(namespaces) }); err != nil {
		return p, fmt.Errorf("%s not in every namespace of org %s: %w", enforcing, o.name, err)
	}
	p.copied = time.Since(start)
	if err := poll(ctx, 10*time.Minute, func() bool { return m.countQuotas(ctx, namespaces, enforcing, true) == len(namespaces) }); err != nil {
		return p, fmt.Errorf("%s not enforced in every namespace of org %s: %w", enforcing, o.name, err)
	}
	p.enforced = time.Since(start)
	return p, nil
}

// countQuotas counts the namespaces that hold the ResourceQuota, or that enforce it.
func (m *measure) countQuotas(ctx context.Context, namespaces []string, name string, enforced bool) int {
	list := &corev1.ResourceQuotaList{}
	if err := m.k8s.List(ctx, list, client.MatchingFields{"metadata.name": name}); err != nil {
		return 0
	}
	n := 0
	for _, q := range list.Items {
		if slices.Contains(namespaces, q.Namespace) && (!enforced || inForce(&q)) {
			n++
		}
	}
	return n
}

// inForce says whether the apiserver enforces every limit of a quota: it enforces the limits in
// the quota's status, which kube-controller-manager writes with their usage.
func inForce(q *corev1.ResourceQuota) bool {
	if len(q.Status.Hard) == 0 {
		return false
	}
	for name := range q.Spec.Hard {
		if _, ok := q.Status.Used[name]; !ok {
			return false
		}
	}
	return true
}

// newSpaces creates spaces one at a time, alternating between the quota's org and one
// without, and times each: CFSpace created until its namespace enforces the quota, and until
// cf-hnc calls it BuildReady (HNC's copies of the org's credentials have arrived).
func (m *measure) newSpaces(ctx context.Context, quotaOrg, plain *org, enforcing string) (withQuota, without spaceTimes, err error) {
	say(fmt.Sprintf("creating %d new spaces one at a time in each org", m.cfg.newSpaces))
	for range m.cfg.newSpaces {
		if err := m.newSpace(ctx, quotaOrg.name, enforcing, &withQuota); err != nil {
			return withQuota, without, err
		}
		if err := m.newSpace(ctx, plain.name, "", &without); err != nil {
			return withQuota, without, err
		}
	}
	return withQuota, without, nil
}

// spaceTimes are the latencies of new spaces.
type spaceTimes struct{ enforced, buildReady []time.Duration }

func (m *measure) newSpace(ctx context.Context, org, enforcing string, times *spaceTimes) error {
	guid := string(uuid.NewUUID())
	space := newSpace(org, guid)
	start := time.Now()
	if err := m.k8s.Create(ctx, space); err != nil {
		return err
	}
	if enforcing != "" {
		quota := &corev1.ResourceQuota{}
		if err := poll(ctx, time.Minute, func() bool {
			return m.k8s.Get(ctx, client.ObjectKey{Namespace: guid, Name: enforcing}, quota) == nil && inForce(quota)
		}); err != nil {
			return fmt.Errorf("space %s: %s not enforced: %w", guid, enforcing, err)
		}
		times.enforced = append(times.enforced, time.Since(start))
	}
	if err := poll(ctx, time.Minute, func() bool {
		return m.k8s.Get(ctx, client.ObjectKeyFromObject(space), space) == nil &&
			meta.IsStatusConditionTrue(space.Status.Conditions, cfv1alpha1.BuildReadyCondition)
	}); err != nil {
		return fmt.Errorf("space %s of org %s not BuildReady (%v): %w", guid, org,
			meta.FindStatusCondition(space.Status.Conditions, cfv1alpha1.BuildReadyCondition), err)
	}
	times.buildReady = append(times.buildReady, time.Since(start))
	return nil
}

// createTimes are the latencies of create calls of one kind.
type createTimes struct{ secrets, apps []time.Duration }

// creates times Secret and CFApp creates, one at a time, alternating between a space under the
// quota and one without, so that both see the same load.
func (m *measure) creates(ctx context.Context, quotaSpace, plainSpace string) (withQuota, without createTimes, err error) {
	say(fmt.Sprintf("creating %d Secrets and %d CFApps one at a time in each space", m.cfg.creates, m.cfg.creates))
	for range m.cfg.creates {
		for _, s := range []struct {
			space string
			times *createTimes
		}{{quotaSpace, &withQuota}, {plainSpace, &without}} {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.space, Name: "s-" + string(uuid.NewUUID())[:8]},
				Data: map[string][]byte{"k": []byte("v")}}
			took, err := timed(func() error { return m.k8s.Create(ctx, secret) })
			if err != nil {
				return withQuota, without, err
			}
			s.times.secrets = append(s.times.secrets, took)
			app := &cfv1alpha1.CFApp{ObjectMeta: metav1.ObjectMeta{Namespace: s.space, Name: string(uuid.NewUUID())},
				Spec: cfv1alpha1.CFAppSpec{DisplayName: "app", DesiredState: cfv1alpha1.StoppedState,
					Lifecycle: cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle}}}
			if took, err = timed(func() error { return m.k8s.Create(ctx, app) }); err != nil {
				return withQuota, without, err
			}
			s.times.apps = append(s.times.apps, took)
		}
	}
	return withQuota, without, nil
}

// times is every limit of hard multiplied by n.
func times(hard corev1.ResourceList, n int) corev1.ResourceList {
	scaled := corev1.ResourceList{}
	for name, limit := range hard {
		q := limit.DeepCopy()
		q.Mul(int64(n))
		scaled[name] = q
	}
	return scaled
}

func timed(do func() error) (time.Duration, error) {
	start := time.Now()
	err := do()
	return time.Since(start), err
}

// memory is the HNC manager's resident and heap memory, from its metrics.
type memory struct{ rss, heap float64 }

func (m *measure) hncMemory(ctx context.Context) (memory, error) {
	var err error
	if m.hncMetrics, err = m.cp.HNCMetrics(ctx); err != nil {
		return memory{}, err
	}
	if err := m.hncIdle(ctx); err != nil {
		return memory{}, err
	}
	families, err := metrics.ScrapeURL(ctx, http.DefaultClient, "http://"+m.hncMetrics+"/metrics", nil)
	if err != nil {
		return memory{}, err
	}
	gauge := func(name string) float64 {
		if f := families[name]; f != nil && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
		return 0
	}
	return memory{rss: gauge("process_resident_memory_bytes"), heap: gauge("go_memstats_heap_inuse_bytes")}, nil
}

// hncIdle waits until HNC's work queues are empty, so that memory is read at rest.
func (m *measure) hncIdle(ctx context.Context) error {
	return poll(ctx, 5*time.Minute, func() bool {
		families, err := metrics.ScrapeURL(ctx, http.DefaultClient, "http://"+m.hncMetrics+"/metrics", nil)
		if err != nil || families["workqueue_depth"] == nil {
			return false
		}
		for _, f := range []string{"workqueue_depth", "workqueue_unfinished_work_seconds"} {
			for _, metric := range families[f].GetMetric() {
				if metric.GetGauge().GetValue() > 0 {
					return false
				}
			}
		}
		return true
	})
}

// restartHNCWithHRQ adds --enable-hrq to the args of HNC's Deployment, as HNC's hrq variant
// runs it, waits until it is rolled out, and registers the variant's two webhooks.
func (m *measure) restartHNCWithHRQ(ctx context.Context) error {
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "hnc-system", Name: "hnc-controller-manager"}}
	patch := []byte(`[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--enable-hrq"}]`)
	if err := m.k8s.Patch(ctx, deployment, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return err
	}
	if err := m.cp.WaitRolledOut(ctx, "hnc-manager"); err != nil {
		return err
	}
	if err := m.registerHRQWebhooks(ctx); err != nil {
		return err
	}
	// Ready when HNC's object webhook answers again: writes in the tree need it.
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.RootNamespace, Name: "hrq-probe"}}
	if err := poll(ctx, 2*time.Minute, func() bool { return m.k8s.Create(ctx, probe) == nil }); err != nil {
		return fmt.Errorf("HNC with --enable-hrq does not answer: %w", err)
	}
	return m.k8s.Delete(ctx, probe)
}

// registerHRQWebhooks registers the webhooks of HNC's hrq variant as it ships them, at HNC's
// webhook Service and with the CA of HNC's other webhooks.
func (m *measure) registerHRQWebhooks(ctx context.Context) error {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/hierarchical-namespaces").Output()
	if err != nil {
		return fmt.Errorf("finding HNC's module: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), hrqWebhooks))
	if err != nil {
		return err
	}
	shipped := &admissionv1.ValidatingWebhookConfiguration{}
	if err := yaml.Unmarshal(data, shipped); err != nil {
		return fmt.Errorf("%s: %w", hrqWebhooks, err)
	}
	existing := &admissionv1.ValidatingWebhookConfigurationList{}
	if err := m.k8s.List(ctx, existing); err != nil {
		return err
	}
	var ca []byte
	for _, c := range existing.Items {
		if strings.HasPrefix(c.Name, "hnc-") && len(c.Webhooks) > 0 {
			ca = c.Webhooks[0].ClientConfig.CABundle
		}
	}
	if ca == nil {
		return errors.New("no HNC webhook configuration to take the CA from")
	}
	hooks := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "hnc-hrq-validating-webhook-configuration"}}
	for _, w := range shipped.Webhooks {
		w.ClientConfig = admissionv1.WebhookClientConfig{CABundle: ca, Service: &admissionv1.ServiceReference{
			Namespace: "hnc-system", Name: "hnc-webhook-service", Path: w.ClientConfig.Service.Path}}
		hooks.Webhooks = append(hooks.Webhooks, w)
	}
	return m.k8s.Create(ctx, hooks)
}

// poll calls done every 20 ms until it returns true.
func poll(ctx context.Context, timeout time.Duration, done func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return done(), nil
	})
}

func (m *measure) exists(ctx context.Context, namespace, name string, obj client.Object) bool {
	return m.k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj) == nil
}

func say(msg string) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), msg)
}
