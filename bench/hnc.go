package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"code.cloudfoundry.org/cf-hnc/internal/metrics"
)

// hncBusy reads the HNC manager's metrics (plain HTTP, at its pod) and says whether any of its
// controllers has work queued or in hand: controller-runtime's workqueue_depth, and
// workqueue_unfinished_work_seconds for items being reconciled.
func (b *bench) hncBusy(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	address, err := b.cp.HNCMetrics(ctx)
	if err != nil {
		return false, err
	}
	families, err := metrics.ScrapeURL(ctx, http.DefaultClient, "http://"+address+"/metrics", nil)
	if err != nil {
		return false, err
	}
	for _, name := range []string{"workqueue_depth", "workqueue_unfinished_work_seconds"} {
		if families[name] == nil {
			// Not idle, unknown: a run must not call HNC quiet on a metric it does not have.
			return false, fmt.Errorf("HNC's metrics have no %s", name)
		}
		for _, m := range families[name].GetMetric() {
			if m.GetGauge().GetValue() > 0 {
				return true, nil
			}
		}
	}
	return false, nil
}

// waitForHNCIdle waits until HNC's queues are empty, so that a quiet space is measured with
// nothing ahead of it: after a bulk creation of 1,000, HNC reconciles every namespace's
// hierarchy once more, at its client's QPS limit, for a minute after the last copy. It returns
// when HNC was found idle.
func (b *bench) waitForHNCIdle(ctx context.Context) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, quietTimeout)
	defer cancel()
	for {
		busy, err := b.hncBusy(ctx)
		if err != nil {
			return time.Time{}, err
		}
		if !busy {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("HNC's queues not empty after %s", quietTimeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// hncThrottleFloor is the least time in which HNC can write n copies, from its flags alone:
// HNC v1.1.0 gives its client --apiserver-qps-throttle requests a second (50 unless set) and a
// burst of 1.5 times that (cmd/manager/main.go), so even with a full bucket and instant
// requests, the writes beyond the burst wait for the throttle.
func hncThrottleFloor(flags []string, n int) (time.Duration, error) {
	const flag = "--apiserver-qps-throttle"
	qps := 50
	for i, f := range flags {
		value, ok := strings.CutPrefix(f, flag+"=")
		if f == flag && i+1 < len(flags) {
			value, ok = flags[i+1], true
		}
		if !ok {
			continue
		}
		parsed, err := strconv.Atoi(value)
		if err != nil || parsed < 1 {
			return 0, fmt.Errorf("HNC flag %s %q: not a positive whole number", flag, value)
		}
		qps = parsed
	}
	beyondBurst := max(0, n-int(float64(qps)*1.5))
	return time.Duration(beyondBurst) * time.Second / time.Duration(qps), nil
}
