package main

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// observer records when the bench process first sees objects arrive through watches: every
// time it reports is a watch arrival on this side of the same apiserver, so that differences
// between two of them (a copy's arrival and the BuildReady written after it) are not skewed by
// creationTimestamps, which have whole seconds.
type observer struct {
	mu sync.Mutex
	// seen is the first arrival of a namespace, Secret, ServiceAccount or anchor, of a
	// CFBuild's Succeeded True and of a CFProcess's Running True on a droplet, by
	// kind/namespace/name.
	seen map[string]time.Time
	// dataChanged is the last arrival of a Secret whose data changed, by Secret key.
	dataChanged map[string]time.Time
	// spaces is the BuildReady history of each CFSpace, by space GUID.
	spaces map[string][]transition
}

// transition is a BuildReady condition that the bench saw, and when.
type transition struct {
	at     time.Time
	status metav1.ConditionStatus
	reason string
}

func key(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// observe starts watches of namespaces, Secrets, ServiceAccounts, anchors, CFSpaces, CFBuilds
// and CFProcesses, and returns once they have listed what exists.
func observe(ctx context.Context, cfg *rest.Config) (*observer, error) {
	informers, err := cache.New(cfg, cache.Options{Scheme: cfscheme.New()})
	if err != nil {
		return nil, err
	}
	o := &observer{seen: map[string]time.Time{}, dataChanged: map[string]time.Time{}, spaces: map[string][]transition{}}
	kinds := map[string]client.Object{"Namespace": &corev1.Namespace{}, "Secret": &corev1.Secret{}, "ServiceAccount": &corev1.ServiceAccount{},
		"SubnamespaceAnchor": &hncv1alpha2.SubnamespaceAnchor{}}
	for kind, obj := range kinds {
		informer, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if m, ok := obj.(metav1.Object); ok {
					o.arrived(key(kind, m.GetNamespace(), m.GetName()))
					o.placed(m)
				}
			},
			UpdateFunc: func(before, after any) {
				if m, ok := after.(metav1.Object); ok {
					o.placed(m)
				}
				old, okOld := before.(*corev1.Secret)
				current, ok := after.(*corev1.Secret)
				if ok && okOld && !reflect.DeepEqual(old.Data, current.Data) {
					o.changedData(key("Secret", current.Namespace, current.Name))
				}
			},
		}); err != nil {
			return nil, err
		}
	}
	for _, w := range []struct {
		obj    client.Object
		record func(client.Object)
	}{
		{&cfv1alpha1.CFSpace{}, func(obj client.Object) { o.buildReady(obj.(*cfv1alpha1.CFSpace)) }},
		{&cfv1alpha1.CFBuild{}, func(obj client.Object) {
			if meta.IsStatusConditionTrue(obj.(*cfv1alpha1.CFBuild).Status.Conditions, cfv1alpha1.SucceededCondition) {
				o.arrived(key(buildSucceeded, obj.GetNamespace(), obj.GetName()))
			}
		}},
		{&cfv1alpha1.CFProcess{}, func(obj client.Object) {
			p := obj.(*cfv1alpha1.CFProcess)
			if meta.IsStatusConditionTrue(p.Status.Conditions, cfv1alpha1.RunningCondition) {
				o.arrived(runningKey(p.Namespace, p.Name, p.Status.Droplet))
			}
		}},
	} {
		if err := onEvery(ctx, informers, w.obj, w.record); err != nil {
			return nil, err
		}
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the bench's watches did not sync")
	}
	return o, nil
}

// onEvery calls record with each object of obj's kind that the watch adds or updates.
func onEvery(ctx context.Context, informers cache.Cache, obj client.Object, record func(client.Object)) error {
	informer, err := informers.GetInformer(ctx, obj)
	if err != nil {
		return err
	}
	handle := func(obj any) {
		if object, ok := obj.(client.Object); ok {
			record(object)
		}
	}
	_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	})
	return err
}

func (o *observer) arrived(k string) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.seen[k]; !ok {
		o.seen[k] = now
	}
}

// placed records when HNC placed a namespace in the tree (it writes the namespace's tree
// labels) and when it labelled a space's namespace with the GUID that cf-hnc asks for on the
// anchor, which it writes with the tree labels.
func (o *observer) placed(obj metav1.Object) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	if _, inTree := ns.Labels[ns.Name+hncv1alpha2.LabelTreeDepthSuffix]; inTree {
		o.arrived(key(namespaceInTree, "", ns.Name))
	}
	if ns.Labels[cfv1alpha1.SpaceGUIDLabel] != "" {
		o.arrived(key(placedNamespace, "", ns.Name))
	}
}

// The kinds under which the observer records a namespace in HNC's tree, a space namespace
// placed and labelled as cf-hnc asks, a CFBuild with Succeeded True, and a CFProcess with
// Running True on a droplet (runningKey).
const (
	namespaceInTree = "NamespaceInTree"
	placedNamespace = "PlacedNamespace"
	buildSucceeded  = "BuildSucceeded"
	processRunning  = "ProcessRunning"
)

// runningKey is the observer's key of a process first seen Running True on a droplet (a
// CFBuild's name): every instance it wants runs the droplet's image and passes its health
// check.
func runningKey(namespace, process, droplet string) string {
	return key(processRunning, namespace, process+"/"+droplet)
}

func (o *observer) changedData(k string) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dataChanged[k] = now
}

// lastDataChange is when the Secret's data last changed after since, if it did.
func (o *observer) lastDataChange(k string, since time.Time) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.dataChanged[k]
	return t, ok && !t.Before(since)
}

func (o *observer) buildReady(space *cfv1alpha1.CFSpace) {
	now := time.Now()
	c := meta.FindStatusCondition(space.Status.Conditions, cfv1alpha1.BuildReadyCondition)
	if c == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	history := o.spaces[space.Name]
	if n := len(history); n > 0 && history[n-1].status == c.Status && history[n-1].reason == c.Reason {
		return
	}
	o.spaces[space.Name] = append(history, transition{at: now, status: c.Status, reason: c.Reason})
}

// arrival is when an object was first seen, if it was.
func (o *observer) arrival(kind, namespace, name string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.seen[key(kind, namespace, name)]
	return t, ok
}

// reached returns when the space's BuildReady first had status and reason (reason "" for any)
// after since.
func (o *observer) reached(space string, since time.Time, status metav1.ConditionStatus, reason string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range o.spaces[space] {
		if !t.at.Before(since) && t.status == status && (reason == "" || t.reason == reason) {
			return t.at, true
		}
	}
	return time.Time{}, false
}

// wait polls done every 50 ms until it returns true, or fails after timeout. The times that
// the bench reports come from the observer, not from the poll: the poll only ends the wait.
func (o *observer) wait(ctx context.Context, timeout time.Duration, what string, done func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("not %s after %s", what, timeout)
		case <-ticker.C:
		}
	}
	return nil
}

// lastArrival is the latest first arrival of the keys, if every one has arrived.
func (o *observer) lastArrival(keys ...string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var last time.Time
	for _, k := range keys {
		t, ok := o.seen[k]
		if !ok {
			return time.Time{}, false
		}
		last = maxTime(last, t)
	}
	return last, true
}
