package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	dto "github.com/prometheus/client_model/go"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/metrics"
)

// rotation breaks a credential Secret and fixes it again, first an org's (its spaces), then
// the root's (every space), and measures until every space below reports each: a password
// change alone leaves nothing in a space's status to wait for, a Secret without credentials
// does (BuildReady False, InvalidDockerConfig; the apiserver itself rejects one that is not
// JSON), and so does its fix.
func (b *bench) rotation(ctx context.Context, r *Results) error {
	org := b.orgs[0]
	var all []string
	for _, o := range b.orgs {
		all = append(all, b.spaces[o]...)
	}
	reg := b.cp.Kpack().Registry
	account := controlplane.OrgsRepository + "/" + org
	for _, rot := range []struct {
		what      string
		secret    client.ObjectKey
		spaces    []string
		fixedData []byte
	}{
		{"an org's Secret", client.ObjectKey{Namespace: org, Name: orgSecret}, b.spaces[org],
			controlplane.DockerConfig(reg.Host(), account, b.cp.Kpack().TenantPassword)},
		{"the root's Secret", client.ObjectKey{Namespace: controlplane.RootNamespace, Name: rootSecret}, all,
			controlplane.DockerConfig(mirrorHost, "mirror", "password-2")},
	} {
		result := Rotation{What: rot.what, Spaces: len(rot.spaces)}
		var err error
		var copies time.Duration
		if result.BrokenSeconds, copies, err = b.changeSecret(ctx, rot.secret, rot.spaces, []byte(`{"auths":{}}`),
			metav1.ConditionFalse, cfv1alpha1.InvalidDockerConfigReason); err != nil {
			return err
		}
		result.HNCCopiesSeconds = copies.Seconds()
		if result.FixedSeconds, copies, err = b.changeSecret(ctx, rot.secret, rot.spaces, rot.fixedData, metav1.ConditionTrue, ""); err != nil {
			return err
		}
		result.HNCFixedCopiesSeconds = copies.Seconds()
		r.Rotation = append(r.Rotation, result)
	}
	return nil
}

// changeSecret sets a Secret's data and returns how long until every space's BuildReady had
// the status and reason, and until HNC's copies in the spaces had the new data.
func (b *bench) changeSecret(ctx context.Context, secretKey client.ObjectKey, spaces []string, data []byte,
	status metav1.ConditionStatus, reason string) (float64, time.Duration, error) {
	patch, err := json.Marshal(map[string]any{"data": map[string][]byte{corev1.DockerConfigJsonKey: data}})
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretKey.Namespace, Name: secretKey.Name}}
	if err := b.k8s.Patch(ctx, secret, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return 0, 0, err
	}
	var last, lastCopy time.Time
	err = b.seen.wait(ctx, 5*time.Minute, fmt.Sprintf("%d spaces BuildReady %s %s", len(spaces), status, reason), func() bool {
		last, lastCopy = time.Time{}, time.Time{}
		for _, s := range spaces {
			at, ok := b.seen.reached(s, start, status, reason)
			if !ok {
				return false
			}
			last = maxTime(last, at)
			if copied, ok := b.seen.lastDataChange(key("Secret", s, secretKey.Name), start); ok {
				lastCopy = maxTime(lastCopy, copied)
			}
		}
		return true
	})
	if err != nil {
		return 0, 0, fmt.Errorf("%w (%s)", err, b.notReady(ctx))
	}
	return last.Sub(start).Seconds(), lastCopy.Sub(start), nil
}

// stackFix publishes a new run image and points the ClusterStack at it, as an operator does
// for a base-image CVE, and measures until every default ClusterBuilder is on it, counting the
// builder manifests kpack pushed meanwhile, then until every app runs a droplet rebased on it,
// then until every app's instance runs that droplet, and then the run time of each rebase pod.
func (b *bench) stackFix(ctx context.Context, fix *StackFix) error {
	reg := b.cp.Kpack().Registry
	for _, spaces := range b.spaces {
		fix.Spaces += len(spaces)
	}
	builderManifests, allManifests := reg.ManifestsPushed(controlplane.BuilderRepository), reg.ManifestsPushed("")
	start := time.Now()
	runImage, err := b.cp.UpgradeRunImage(ctx)
	if err != nil {
		return err
	}
	err = b.seen.wait(ctx, 10*time.Minute, "every default ClusterBuilder on the new run image", func() bool {
		list := &kpackv1alpha2.ClusterBuilderList{}
		if err := b.k8s.List(ctx, list, client.HasLabels{cfv1alpha1.DefaultBuilderLabel}); err != nil || len(list.Items) == 0 {
			return false
		}
		fix.ClusterBuilders = len(list.Items)
		for _, cb := range list.Items {
			ready := cb.Status.GetCondition("Ready")
			if !strings.HasSuffix(cb.Status.Stack.RunImage, runImage.Digest) || ready == nil || !ready.IsTrue() ||
				cb.Status.ObservedGeneration != cb.Generation {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	fix.Seconds = time.Since(start).Seconds()
	fix.BuilderManifests = reg.ManifestsPushed(controlplane.BuilderRepository) - builderManifests
	if len(b.apps) > 0 {
		err = b.seen.wait(ctx, 10*time.Minute, "every app on a rebased droplet", func() bool {
			return !slices.ContainsFunc(b.apps, func(app *cfv1alpha1.CFApp) bool { return !b.runs(ctx, app, runImage.Digest) })
		})
		if err != nil {
			return err
		}
		fix.Apps, fix.AppsSeconds = len(b.apps), time.Since(start).Seconds()
		var running time.Time
		err = b.seen.wait(ctx, 10*time.Minute, "every app's instance running its rebased droplet", func() bool {
			var ok bool
			running, ok = b.instancesRunning(ctx, b.apps...)
			return ok
		})
		if err != nil {
			return err
		}
		fix.InstancesSeconds = running.Sub(start).Seconds()
	}
	fix.AllManifests = reg.ManifestsPushed("") - allManifests
	if len(b.apps) > 0 {
		fix.RebasePod, fix.FailedRebases, err = b.rebasePods(ctx, runImage.Digest)
	}
	return err
}

// steady waits until cf-hnc's writes settle, then counts them over the idle period, with the
// manager's memory and CPU.
func (b *bench) steady(ctx context.Context, r *Results) error {
	token, err := b.metricsToken(ctx)
	if err != nil {
		return err
	}
	writes := func() (map[string]float64, error) {
		address, err := b.cp.ManagerMetrics(ctx)
		if err != nil {
			return nil, err
		}
		families, err := metrics.Scrape(ctx, address, token)
		if err != nil {
			return nil, err
		}
		if families[metrics.APIWritesName] == nil {
			// An empty scrape would read as "no write".
			return nil, fmt.Errorf("the manager reports no %s", metrics.APIWritesName)
		}
		_, byVerbKind := metrics.Writes(families)
		r.Steady.RunReconciles, r.Steady.RunReconcileSeconds = reconciles(families)
		if h := families[metrics.SpaceBuildReadyName]; h != nil && len(h.GetMetric()) > 0 {
			hist := h.GetMetric()[0].GetHistogram()
			r.Steady.HistogramCount = hist.GetSampleCount()
			if hist.GetSampleCount() > 0 {
				r.Steady.HistogramMeanSeconds = hist.GetSampleSum() / float64(hist.GetSampleCount())
			}
		}
		return byVerbKind, nil
	}
	var settled map[string]float64
	err = b.seen.wait(ctx, 3*time.Minute, "cf-hnc's writes settled (10 s without one)", func() bool {
		before, err := writes()
		if err != nil {
			return false
		}
		time.Sleep(10 * time.Second)
		settled, err = writes()
		return err == nil && total(settled) == total(before)
	})
	if err != nil {
		return err
	}
	pid, err := b.cp.ManagerPID(ctx)
	if err != nil {
		return err
	}
	cpuBefore, err := cpuSeconds(pid)
	if err != nil {
		return err
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.cfg.idle):
	}
	after, err := writes()
	if err != nil {
		return err
	}
	s := &r.Steady
	s.IdleSeconds = time.Since(start).Seconds()
	s.RunWrites = settled
	s.IdleWrites = map[string]float64{}
	for k, v := range after {
		if d := v - settled[k]; d != 0 {
			s.IdleWrites[k] = d
		}
	}
	s.WritesPerMinute = total(s.IdleWrites) / s.IdleSeconds * 60
	if s.CPUSeconds, err = cpuSeconds(pid); err != nil {
		return err
	}
	s.IdleCPUSeconds = s.CPUSeconds - cpuBefore
	s.Memory, err = memory(pid)
	return err
}

// reconciles are controller-runtime's reconciles by controller, and the seconds they took in
// all (controller_runtime_reconcile_time_seconds).
func reconciles(families map[string]*dto.MetricFamily) (count, seconds map[string]float64) {
	count, seconds = map[string]float64{}, map[string]float64{}
	for _, m := range families["controller_runtime_reconcile_total"].GetMetric() {
		count[controllerOf(m)] += m.GetCounter().GetValue()
	}
	for _, m := range families["controller_runtime_reconcile_time_seconds"].GetMetric() {
		seconds[controllerOf(m)] += m.GetHistogram().GetSampleSum()
	}
	return count, seconds
}

func controllerOf(m *dto.Metric) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == "controller" {
			return l.GetValue()
		}
	}
	return ""
}

func total(m map[string]float64) float64 {
	sum := 0.0
	for _, v := range m {
		sum += v
	}
	return sum
}

// metricsToken returns the token of a ServiceAccount allowed to read the manager's metrics, as
// a Prometheus in the cluster would have.
func (b *bench) metricsToken(ctx context.Context) (string, error) {
	ns := "bench-metrics-" + string(uuid.NewUUID())[:8]
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}}
	if err := createAll(ctx, b.k8s,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		sa,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cf-hnc-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
		},
	); err != nil {
		return "", err
	}
	request := &authenticationv1.TokenRequest{}
	if err := b.k8s.SubResource("token").Create(ctx, sa, request); err != nil {
		return "", err
	}
	return request.Status.Token, nil
}

// cpuSeconds is the user and system CPU time of a process so far.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: the fields that follow it start after its ")".
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat has %d fields after the name", pid, len(fields))
	}
	utime, err := strconv.ParseFloat(fields[11], 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseFloat(fields[12], 64)
	if err != nil {
		return 0, err
	}
	// USER_HZ is 100 on Linux for every architecture Go runs the manager on.
	return (utime + stime) / 100, nil
}

// memory reads a process's resident memory, in MiB: now, at its peak, and now split into
// anonymous pages (its heap and stacks) and file pages (its mapped binary).
func memory(pid int) (Memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	fields := map[string]*float64{}
	var m Memory
	fields["VmRSS"], fields["VmHWM"], fields["RssAnon"], fields["RssFile"] = &m.RSSMiB, &m.PeakRSSMiB, &m.AnonMiB, &m.FileMiB
	for _, line := range strings.Split(string(data), "\n") {
		name, value, _ := strings.Cut(line, ":")
		kib, convErr := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")), 64)
		if field, ok := fields[name]; ok && convErr == nil {
			*field = kib / 1024
		}
	}
	if m.RSSMiB == 0 || m.PeakRSSMiB == 0 {
		return Memory{}, fmt.Errorf("no VmRSS or VmHWM in /proc/%d/status", pid)
	}
	return m, nil
}

// restart replaces the manager's pods as a rolling update does, then kills the leader's process
// as a crash would; each time it waits until the manager runs again and creates a new space.
func (b *bench) restart(ctx context.Context, r *Results) error {
	if err := b.restartWith(ctx, b.cp.RestartManager, "after-rolling-update", &r.RollingUpdate); err != nil {
		return err
	}
	return b.restartWith(ctx, b.cp.CrashManager, "after-crash", &r.Crash)
}

func (b *bench) restartWith(ctx context.Context, restart func(context.Context) error, space string, r *Restart) error {
	stopped := time.Now()
	if err := restart(ctx); err != nil {
		return err
	}
	if err := b.cp.WaitManagerReady(ctx); err != nil {
		return err
	}
	r.ManagerReadySeconds = time.Since(stopped).Seconds()
	t, err := b.newSpace(ctx, b.orgs[0], string(uuid.NewUUID()), space)
	if err != nil {
		return err
	}
	r.NewSpaceSeconds = t.latency().Seconds()
	r.StopToBuildReadySeconds = t.ready.Sub(stopped).Seconds()
	return nil
}
