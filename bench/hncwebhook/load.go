package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	"code.cloudfoundry.org/cf-hnc/internal/harness/controlplane"
	"code.cloudfoundry.org/cf-hnc/internal/metrics"
)

// loadInterval is how often the load changes its Secret: faster than HNC, at its client's 50
// writes a second, copies it into a hundred spaces, so that HNC never runs out of work.
const loadInterval = 100 * time.Millisecond

// load keeps HNC busy without growing its tree: it changes a Secret that HNC propagates from an
// org into each of its spaces, again and again, and HNC writes every copy anew each time.
type load struct {
	// mu is held for each change; holding it pauses the load.
	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan error
	updates int
}

// startLoad makes an org of spaces with a propagated Secret, waits for its copies, and starts
// changing it.
func (m *measure) startLoad(ctx context.Context, spaces int) (*load, error) {
	org, err := m.subnamespace(ctx, controlplane.RootNamespace, "load-org")
	if err != nil {
		return nil, err
	}
	for i := range spaces {
		anchor := &hncv1alpha2.SubnamespaceAnchor{ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: fmt.Sprintf("load-space-%03d", i)}}
		if err := m.k8s.Create(ctx, anchor); err != nil {
			return nil, err
		}
	}
	source := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: org, Name: "load-source",
			Annotations: map[string]string{hncv1alpha2.AnnotationPropagatePrefix + "/all": "true"}},
		StringData: map[string]string{"n": "0"},
	}
	if err := m.k8s.Create(ctx, source); err != nil {
		return nil, err
	}
	err = poll(ctx, 5*time.Minute, func() bool {
		copies := &corev1.SecretList{}
		return m.k8s.List(ctx, copies, client.MatchingLabels{hncv1alpha2.LabelInheritedFrom: org}) == nil && len(copies.Items) == spaces
	})
	if err != nil {
		return nil, fmt.Errorf("HNC did not copy %s into the %d spaces of %s: %w", source.Name, spaces, org, err)
	}
	loadCtx, cancel := context.WithCancel(ctx)
	l := &load{cancel: cancel, done: make(chan error, 1)}
	go func() { l.done <- l.run(loadCtx, m.k8s, source) }()
	return l, nil
}

func (l *load) run(ctx context.Context, k8s client.Client, source *corev1.Secret) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(loadInterval):
		}
		l.mu.Lock()
		patch := client.MergeFrom(source.DeepCopy())
		source.StringData = map[string]string{"n": strconv.Itoa(l.updates + 1)}
		err := k8s.Patch(ctx, source, patch)
		if err == nil {
			l.updates++
		}
		l.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("changing the load's Secret: %w", err)
		}
	}
}

// stop ends the load and says how often it changed its Secret.
func (l *load) stop() (int, error) {
	l.cancel()
	err := <-l.done
	return l.updates, err
}

// hncIdle waits until HNC's work queues are empty.
func (m *measure) hncIdle(ctx context.Context) error {
	return poll(ctx, 5*time.Minute, func() bool {
		families, err := metrics.ScrapeURL(ctx, http.DefaultClient, m.metricsURL, nil)
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
