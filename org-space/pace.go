package orgspace

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// waitPacer holds back what a space's wait for HNC's copies waits for. HNC copies a space's
// Secrets and ServiceAccounts one at a time, seconds apart under load, and each arrival changes
// the BuildReady message and status.build: a status write for each would double what cf-hnc
// writes during a bulk creation. The start and the end of a wait are written at once; a change
// of what it waits for at most once per interval.
type waitPacer struct {
	interval time.Duration
	mu       sync.Mutex
	// written is when the status of a space in a wait was last written.
	written map[types.UID]time.Time
}

func newWaitPacer(interval time.Duration) *waitPacer {
	return &waitPacer{interval: interval, written: map[types.UID]time.Time{}}
}

// hold returns how long to hold back the status a reconcile computed (after, where before was
// read), or 0 if it is to be written now.
func (p *waitPacer) hold(uid types.UID, before, after *cfv1alpha1.CFSpaceStatus, now time.Time) time.Duration {
	if equality.Semantic.DeepEqual(before, after) {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !waiting(after) {
		delete(p.written, uid)
		return 0
	}
	if last, ok := p.written[uid]; ok && waitGoesOn(before, after) && now.Sub(last) < p.interval {
		return p.interval - now.Sub(last)
	}
	p.written[uid] = now
	return 0
}

func (p *waitPacer) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.written, uid)
}

// waiting says whether the space's builds wait for a step of another component.
func waiting(s *cfv1alpha1.CFSpaceStatus) bool {
	c := meta.FindStatusCondition(s.Conditions, cfv1alpha1.BuildReadyCondition)
	return c != nil && c.Status != metav1.ConditionTrue && cfv1alpha1.Waiting(c.Reason)
}

// waitGoesOn says whether after differs from before only in what the wait waits for: every
// condition keeps its status, reason and generation, and only BuildReady's message changes
// (status.build may change too: no build uses it before BuildReady is True).
func waitGoesOn(before, after *cfv1alpha1.CFSpaceStatus) bool {
	if !waiting(before) || len(before.Conditions) != len(after.Conditions) {
		return false
	}
	for _, c := range after.Conditions {
		old := meta.FindStatusCondition(before.Conditions, c.Type)
		if old == nil || old.Status != c.Status || old.Reason != c.Reason || old.ObservedGeneration != c.ObservedGeneration ||
			(old.Message != c.Message && c.Type != cfv1alpha1.BuildReadyCondition) {
			return false
		}
	}
	return true
}
