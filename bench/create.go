package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
)

const (
	// propagateAll is the annotation that makes HNC copy an object in AllowPropagate mode.
	propagateAll = "propagate.hnc.x-k8s.io/all"
	orgSecret    = "cf-registry-org"
	orgSA        = "cf-build-org"
	// rootSecret holds credentials for a second registry in the root: every space uses it,
	// so that changing it reaches every space.
	rootSecret = "cf-registry-mirror"
	mirrorHost = "mirror.bench.invalid"
	// hncRoot is the root namespace of the HNC-alone run, as cf is of cf-hnc's.
	hncRoot = "bench-hnc"
)

// createAll creates objs in order and stops at the first error.
func createAll(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// parallel runs do(i) for i in [0, n) on up to workers goroutines, and returns the first error.
func parallel(ctx context.Context, workers, n int, do func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error { return do(ctx, i) })
	}
	return g.Wait()
}

// timings collects, for each item of a bulk creation, when its create call started and how
// long the call took.
type timings struct {
	mu       sync.Mutex
	starts   map[string]time.Time
	calls    []time.Duration
	lastCall time.Time
}

// create calls do, the create of item, and records when it started and how long it took.
func (t *timings) create(item string, do func() error) error {
	start := time.Now()
	err := do()
	end := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.starts == nil {
		t.starts = map[string]time.Time{}
	}
	t.starts[item] = start
	t.calls = append(t.calls, end.Sub(start))
	t.lastCall = maxTime(t.lastCall, end)
	return err
}

func (t *timings) first() time.Time {
	var first time.Time
	for _, s := range t.starts {
		if first.IsZero() || s.Before(first) {
			first = s
		}
	}
	return first
}

func bulk(name string, latencies []time.Duration, first, last time.Time) Bulk {
	total := last.Sub(first).Seconds()
	return Bulk{Latency: distribution(name, latencies), TotalSeconds: total, PerSecond: float64(len(latencies)) / total}
}

// bulkOf is bulk for items created through starts, with their create calls and the requests
// that the apiserver served from before until now.
func (b *bench) bulkOf(ctx context.Context, name, calls string, latencies []time.Duration, starts *timings, last time.Time, before apiserverRequests) (Bulk, error) {
	after, err := b.apiserverRequests(ctx)
	if err != nil {
		return Bulk{}, err
	}
	result := bulk(name, latencies, starts.first(), last)
	result.CreateCalls = distribution(calls, starts.calls)
	result.CreatedSeconds = starts.lastCall.Sub(starts.first()).Seconds()
	result.Requests = after.since(before)
	return result, nil
}

// floor creates as many namespaces as there will be spaces, directly: the apiserver's own cost
// of a namespace, without HNC or cf-hnc in the path (HNC still labels them afterwards).
func (b *bench) floor(ctx context.Context, r *Results) error {
	n := b.cfg.orgs * b.cfg.spaces
	latencies := make([]time.Duration, n)
	start := time.Now()
	err := parallel(ctx, b.cfg.workers, n, func(ctx context.Context, i int) error {
		t := time.Now()
		err := b.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-floor-%d", i)}})
		latencies[i] = time.Since(t)
		return err
	})
	if err != nil {
		return err
	}
	r.Floor = bulk("apiserver: namespace create", latencies, start, time.Now())
	return nil
}

// hncAlone asks HNC, without cf-hnc, for what a cf-hnc run asks of it: a root namespace with
// a Secret to propagate, an org subnamespace per org with a Secret and a ServiceAccount to
// propagate, then every space subnamespace anchor in bulk, each anchor with the labels and the
// annotation cf-hnc's ask for; done when all three copies exist in every space.
func (b *bench) hncAlone(ctx context.Context, r *Results) error {
	host := b.cp.Kpack().Registry.Host()
	propagate := map[string]string{propagateAll: "true"}
	if err := createAll(ctx, b.k8s,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hncRoot}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hncRoot, Name: rootSecret, Annotations: propagate},
			Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: controlplane.DockerConfig(mirrorHost, "mirror", "password")}},
	); err != nil {
		return err
	}
	for o := range b.cfg.orgs {
		parent := fmt.Sprintf("bench-hnc-%d", o)
		if err := b.k8s.Create(ctx, hncAloneAnchor(hncRoot, parent)); err != nil {
			return err
		}
		if err := b.seen.wait(ctx, time.Minute, "namespace "+parent, func() bool {
			_, ok := b.seen.arrival("Namespace", "", parent)
			return ok
		}); err != nil {
			return err
		}
		if err := createAll(ctx, b.k8s,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: parent, Name: orgSecret, Annotations: propagate},
				Type: corev1.SecretTypeDockerConfigJson,
				Data: map[string][]byte{corev1.DockerConfigJsonKey: controlplane.DockerConfig(host, "hnc-alone", "password")}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: parent, Name: orgSA, Annotations: propagate}},
		); err != nil {
			return err
		}
	}
	before, err := b.apiserverRequests(ctx)
	if err != nil {
		return err
	}
	var starts timings
	children := make([]string, b.cfg.orgs*b.cfg.spaces)
	err = parallel(ctx, b.cfg.workers, len(children), func(ctx context.Context, i int) error {
		parent := fmt.Sprintf("bench-hnc-%d", i/b.cfg.spaces)
		children[i] = fmt.Sprintf("%s-%d", parent, i%b.cfg.spaces)
		return starts.create(children[i], func() error { return b.k8s.Create(ctx, hncAloneAnchor(parent, children[i])) })
	})
	if err != nil {
		return err
	}
	if err := b.seen.wait(ctx, b.bulkTimeout(), "every copy in HNC's subnamespaces", func() bool {
		return slices.IndexFunc(children, func(ns string) bool { _, ok := b.hncAloneCopied(ns); return !ok }) < 0
	}); err != nil {
		return err
	}
	latencies := make([]time.Duration, len(children))
	var last time.Time
	for i, ns := range children {
		at, _ := b.hncAloneCopied(ns)
		latencies[i] = at.Sub(starts.starts[ns])
		last = maxTime(last, at)
	}
	if r.HNC, err = b.bulkOf(ctx, "HNC alone: anchor → copies (bulk)", "HNC alone: anchor create call (bulk)", latencies, &starts, last, before); err != nil {
		return err
	}

	idle, err := b.waitForHNCIdle(ctx)
	if err != nil {
		return err
	}
	r.HNCIdleSeconds = idle.Sub(last).Seconds()
	return nil
}

// hncAloneCopies are the keys of the three copies that a space needs, in HNC alone's
// subnamespace ns.
func hncAloneCopies(ns string) []string {
	return []string{key("Secret", ns, orgSecret), key("ServiceAccount", ns, orgSA), key("Secret", ns, rootSecret)}
}

// hncAloneCopied is when the copies had all arrived in ns, if they had.
func (b *bench) hncAloneCopied(ns string) (time.Time, bool) {
	return b.seen.lastArrival(hncAloneCopies(ns)...)
}

// quietAnchor creates an anchor for child in parent, as HNC alone's are made, and waits until
// its namespace is in HNC's tree with the three copies that a space needs.
func (b *bench) quietAnchor(ctx context.Context, parent, child string) (anchorTimeline, error) {
	t := anchorTimeline{start: time.Now()}
	if err := b.k8s.Create(ctx, hncAloneAnchor(parent, child)); err != nil {
		return t, err
	}
	t.created = time.Now()
	copied := func() (time.Time, bool) {
		return b.seen.lastArrival(append(hncAloneCopies(child), key(namespaceInTree, "", child))...)
	}
	if err := b.seen.wait(ctx, quietTimeout, "the copies in "+child+", in the tree", func() bool { _, ok := copied(); return ok }); err != nil {
		return t, err
	}
	t.copied, _ = copied()
	t.anchor, _ = b.seen.arrival("SubnamespaceAnchor", parent, child)
	t.namespace, _ = b.seen.arrival("Namespace", "", child)
	return t, nil
}

// anchorTimeline is when one quiet anchor's subnamespace passed each step, as the bench saw it.
type anchorTimeline struct {
	start, created, anchor, namespace, copied time.Time
}

// anchorRuns collects the timelines of one kind of quiet anchor, as latencies and stages.
type anchorRuns struct {
	latencies []time.Duration
	stages    *stages
}

func newAnchorRuns(who string) *anchorRuns {
	return &anchorRuns{stages: newStages(who+": anchor create call (HNC's webhook)", who+": created → anchor seen",
		who+": anchor → namespace", who+": namespace → in the tree and copies")}
}

// measure waits until HNC is idle, then measures one anchor with measure.
func (a *anchorRuns) measure(ctx context.Context, b *bench, measure func() (anchorTimeline, error)) error {
	if _, err := b.waitForHNCIdle(ctx); err != nil {
		return err
	}
	t, err := measure()
	if err != nil {
		return err
	}
	a.latencies = append(a.latencies, t.copied.Sub(t.start))
	a.stages.add(t.start, t.created, t.anchor, t.namespace, t.copied)
	return nil
}

// anchorInOrg is quietAnchor in one of cf-hnc's orgs, without a CFSpace: HNC's part of a quiet
// space in cf-hnc's own tree, beside its sibling spaces, the org's and the root's objects and
// the admission policies. The anchor is deleted again (HNC deletes its namespace), so that
// later phases find only cf-hnc's spaces in the tree.
func (b *bench) anchorInOrg(ctx context.Context, org string) (anchorTimeline, error) {
	child := string(uuid.NewUUID())
	t, err := b.quietAnchor(ctx, org, child)
	if err != nil {
		return t, err
	}
	return t, b.k8s.Delete(ctx, hncAloneAnchor(org, child))
}

// quietTimeout bounds the wait for HNC's queues to empty, and for one quiet subnamespace or
// space. After a bulk creation of 1,000, HNC alone's queues took a minute to empty on 2 cores,
// so the bound is well above that: the run reports the time, whatever it is.
const quietTimeout = 5 * time.Minute

// hncAloneAnchor is an anchor that asks HNC for what cf-hnc's anchors ask of it besides the
// namespace: the GUID labels and the display-name annotation, which HNC writes on the namespace
// as managed labels and annotations (config/hnc). An org's anchor is in hncRoot.
func hncAloneAnchor(parent, name string) *hncv1alpha2.SubnamespaceAnchor {
	spec := hncv1alpha2.SubnamespaceAnchorSpec{
		Labels:      []hncv1alpha2.MetaKVP{{Key: cfv1alpha1.OrgGUIDLabel, Value: parent}, {Key: cfv1alpha1.SpaceGUIDLabel, Value: name}},
		Annotations: []hncv1alpha2.MetaKVP{{Key: cfv1alpha1.SpaceNameAnnotation, Value: name}},
	}
	if parent == hncRoot {
		spec = hncv1alpha2.SubnamespaceAnchorSpec{
			Labels:      []hncv1alpha2.MetaKVP{{Key: cfv1alpha1.OrgGUIDLabel, Value: name}},
			Annotations: []hncv1alpha2.MetaKVP{{Key: cfv1alpha1.OrgNameAnnotation, Value: name}},
		}
	}
	return &hncv1alpha2.SubnamespaceAnchor{ObjectMeta: metav1.ObjectMeta{Namespace: parent, Name: name}, Spec: spec}
}

// bulkTimeout bounds a bulk phase: at 1 space/s and then some.
func (b *bench) bulkTimeout() time.Duration {
	return time.Duration(b.cfg.orgs*b.cfg.spaces)*time.Second + 5*time.Minute
}

// cfhnc creates the orgs with their registry once, as an operator would, then every space in
// bulk until each is BuildReady, then quiet spaces one at a time.
func (b *bench) cfhnc(ctx context.Context, r *Results) error {
	pid, err := b.cp.ManagerPID(ctx)
	if err != nil {
		return err
	}
	memoryNoSpaces, err := memory(pid)
	if err != nil {
		return err
	}
	r.MemoryNoSpaces = memoryNoSpaces
	if err := b.placeRootMirror(ctx); err != nil {
		return err
	}
	for o := range b.cfg.orgs {
		org, err := b.createOrg(ctx, fmt.Sprintf("org-%d", o))
		if err != nil {
			return err
		}
		b.orgs = append(b.orgs, org)
	}
	b.spaces = map[string][]string{}
	before, err := b.apiserverRequests(ctx)
	if err != nil {
		return err
	}
	var starts timings
	guids := make([]string, b.cfg.orgs*b.cfg.spaces)
	for i := range guids {
		guids[i] = string(uuid.NewUUID())
		b.spaces[b.orgs[i/b.cfg.spaces]] = append(b.spaces[b.orgs[i/b.cfg.spaces]], guids[i])
	}
	err = parallel(ctx, b.cfg.workers, len(guids), func(ctx context.Context, i int) error {
		return starts.create(guids[i], func() error {
			return b.k8s.Create(ctx, newSpace(b.orgs[i/b.cfg.spaces], guids[i], fmt.Sprintf("space-%d", i%b.cfg.spaces)))
		})
	})
	if err != nil {
		return err
	}
	if err := b.seen.wait(ctx, b.bulkTimeout(), "every space BuildReady", func() bool {
		return slices.IndexFunc(guids, func(g string) bool {
			_, ok := b.seen.reached(g, starts.starts[g], metav1.ConditionTrue, "")
			return !ok
		}) < 0
	}); err != nil {
		return fmt.Errorf("%w (%s)", err, b.notReady(ctx))
	}
	latencies := make([]time.Duration, len(guids))
	var shares []time.Duration
	var lastReady, lastCopy time.Time
	for i, g := range guids {
		ready, _ := b.seen.reached(g, starts.starts[g], metav1.ConditionTrue, "")
		latencies[i] = ready.Sub(starts.starts[g])
		lastReady = maxTime(lastReady, ready)
		if input, ok := b.lastInput(g); ok {
			shares = append(shares, ready.Sub(input))
			lastCopy = maxTime(lastCopy, input)
		}
	}
	if r.CFHNC, err = b.bulkOf(ctx, "cf-hnc: space → BuildReady (bulk)", "cf-hnc: CFSpace create call (bulk)", latencies, &starts, lastReady, before); err != nil {
		return err
	}
	r.CFHNCEveryCopySeconds = lastCopy.Sub(starts.first()).Seconds()
	r.OwnShareBulk = distribution("cf-hnc's own share (bulk)", shares)

	idle, err := b.waitForHNCIdle(ctx)
	if err != nil {
		return err
	}
	r.CFHNCIdleSeconds = idle.Sub(lastReady).Seconds()
	return b.quietSpaces(ctx, r)
}

// quietSpaces creates quiet spaces one at a time, each in turn with one of HNC alone's
// subnamespaces and one anchor in the same org without a CFSpace, and each once HNC is idle.
func (b *bench) quietSpaces(ctx context.Context, r *Results) error {
	say(fmt.Sprintf("  %d quiet spaces, as many of HNC alone's subnamespaces and of anchors in cf-hnc's orgs, in turn, each once HNC is idle", b.cfg.quiet))
	var quiet, quietShares []time.Duration
	spaceStages := newStages("cf-hnc: CFSpace create call (its webhook)", "cf-hnc: created → anchor seen", "HNC: anchor → namespace",
		"HNC: namespace → placed and copies", "cf-hnc: last input → BuildReady")
	hncAlone, inOrg := newAnchorRuns("HNC alone"), newAnchorRuns("HNC in cf-hnc's org")
	for q := range b.cfg.quiet {
		org := b.orgs[q%len(b.orgs)]
		if err := hncAlone.measure(ctx, b, func() (anchorTimeline, error) {
			return b.quietAnchor(ctx, "bench-hnc-0", fmt.Sprintf("bench-hnc-0-quiet-%d", q))
		}); err != nil {
			return err
		}
		if err := inOrg.measure(ctx, b, func() (anchorTimeline, error) { return b.anchorInOrg(ctx, org) }); err != nil {
			return err
		}
		if _, err := b.waitForHNCIdle(ctx); err != nil {
			return err
		}
		t, err := b.newSpace(ctx, org, string(uuid.NewUUID()), fmt.Sprintf("quiet-%d", q))
		if err != nil {
			return err
		}
		quiet, quietShares = append(quiet, t.latency()), append(quietShares, t.ownShare())
		spaceStages.add(t.start, t.created, t.anchor, t.namespace, t.input, t.ready)
	}
	r.HNCQuiet, r.HNCQuietStages = distribution("HNC alone: anchor → copies (quiet)", hncAlone.latencies), hncAlone.stages.distributions()
	r.InOrgQuiet, r.InOrgQuietStages = distribution("HNC in cf-hnc's org: anchor → copies (quiet)", inOrg.latencies), inOrg.stages.distributions()
	r.Quiet = distribution("cf-hnc: space → BuildReady (quiet)", quiet)
	r.OwnShareQuiet = distribution("cf-hnc's own share (quiet)", quietShares)
	r.QuietStages = spaceStages.distributions()
	return nil
}

// spaceTimeline is when one new space passed each step, as the bench saw it.
type spaceTimeline struct {
	start, created, anchor, namespace, input, ready time.Time
}

func (t spaceTimeline) latency() time.Duration { return t.ready.Sub(t.start) }

// ownShare is BuildReady seen minus the arrival of the last input.
func (t spaceTimeline) ownShare() time.Duration { return t.ready.Sub(t.input) }

// newSpace creates one space and waits until it is BuildReady.
func (b *bench) newSpace(ctx context.Context, org, guid, name string) (spaceTimeline, error) {
	t := spaceTimeline{start: time.Now()}
	if err := b.k8s.Create(ctx, newSpace(org, guid, name)); err != nil {
		return t, err
	}
	t.created = time.Now()
	b.spaces[org] = append(b.spaces[org], guid)
	if err := b.seen.wait(ctx, quietTimeout, "the new space BuildReady", func() bool {
		_, ok := b.seen.reached(guid, t.start, metav1.ConditionTrue, "")
		return ok
	}); err != nil {
		return t, fmt.Errorf("%w (%s)", err, b.notReady(ctx))
	}
	t.ready, _ = b.seen.reached(guid, t.start, metav1.ConditionTrue, "")
	t.anchor, _ = b.seen.arrival("SubnamespaceAnchor", org, guid)
	t.namespace, _ = b.seen.arrival("Namespace", "", guid)
	t.input, _ = b.lastInput(guid)
	return t, nil
}

// lastInput is when the last of what a space's BuildReady is computed from arrived: its
// namespace as HNC placed it in the tree, and HNC's copies of the org's Secret and
// ServiceAccount and of the root's Secret. The ClusterBuilder is Ready before any space exists.
func (b *bench) lastInput(space string) (time.Time, bool) {
	return b.seen.lastArrival(key(placedNamespace, "", space), key("Secret", space, orgSecret),
		key("ServiceAccount", space, orgSA), key("Secret", space, rootSecret))
}

func newSpace(org, guid, name string) *cfv1alpha1.CFSpace {
	return &cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: guid},
		Spec: cfv1alpha1.CFSpaceSpec{DisplayName: name}}
}

// createOrg creates an org, waits until it is Ready and places its registry credentials and
// build ServiceAccount, as `kubectl cf set-registry` does, with the org's registry account.
func (b *bench) createOrg(ctx context.Context, name string) (string, error) {
	org := &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.RootNamespace, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFOrgSpec{DisplayName: name}}
	if err := b.k8s.Create(ctx, org); err != nil {
		return "", err
	}
	if err := b.seen.wait(ctx, time.Minute, "org "+name+" Ready", func() bool {
		return b.k8s.Get(ctx, client.ObjectKeyFromObject(org), org) == nil &&
			meta.IsStatusConditionTrue(org.Status.Conditions, cfv1alpha1.ReadyCondition)
	}); err != nil {
		return "", err
	}
	reg := b.cp.Kpack().Registry
	account := controlplane.OrgsRepository + "/" + org.Name
	labels := map[string]string{cfv1alpha1.BuildConfigLabel: "true"}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: org.Name, Name: orgSecret, Labels: labels,
			Annotations: map[string]string{cfv1alpha1.DropletRepositoryPrefixAnnotation: reg.Host() + "/" + account}},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: controlplane.DockerConfig(reg.Host(), account, b.cp.Kpack().TenantPassword)},
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: org.Name, Name: orgSA, Labels: labels}}
	if err := createAll(ctx, b.k8s, secret, sa); err != nil {
		return "", err
	}
	// Spaces come after cf-hnc has marked the org's objects for HNC, as they would on a real
	// foundation, where orgs are made long before their spaces.
	return org.Name, b.seen.wait(ctx, time.Minute, "org "+name+"'s objects marked for HNC", func() bool {
		for _, obj := range []client.Object{secret, sa} {
			if b.k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj) != nil || obj.GetAnnotations()[propagateAll] != "true" {
				return false
			}
		}
		return true
	})
}

// placeRootMirror places credentials for a second registry in the root, for every space.
func (b *bench) placeRootMirror(ctx context.Context) error {
	return b.k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.RootNamespace, Name: rootSecret,
			Labels: map[string]string{cfv1alpha1.BuildConfigLabel: "true"}},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: controlplane.DockerConfig(mirrorHost, "mirror", "password-1")},
	})
}

// notReady says why some space is not BuildReady, for an error message.
func (b *bench) notReady(ctx context.Context) string {
	list := &cfv1alpha1.CFSpaceList{}
	if err := b.k8s.List(ctx, list); err != nil {
		return err.Error()
	}
	for _, s := range list.Items {
		if c := meta.FindStatusCondition(s.Status.Conditions, cfv1alpha1.BuildReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
			if c == nil {
				return "space " + s.Name + " has no BuildReady condition"
			}
			return fmt.Sprintf("space %s: %s: %s", s.Name, c.Reason, c.Message)
		}
	}
	return "every space is BuildReady now"
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
