// Package latency summarises the latencies the side benchmarks (bench/quotas, bench/hncwebhook)
// print into docs/benchmarks.md.
package latency

import (
	"fmt"
	"slices"
	"time"
)

// Percentiles is "p50 / p95 / p99" of samples in seconds with the given decimals, by nearest
// rank; "–" for none.
func Percentiles(samples []time.Duration, decimals int) string {
	if len(samples) == 0 {
		return "–"
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	at := func(p float64) float64 {
		i := int(p*float64(len(sorted))+0.999999) - 1
		return sorted[max(0, min(i, len(sorted)-1))].Seconds()
	}
	return fmt.Sprintf("%.*f / %.*f / %.*f", decimals, at(0.50), decimals, at(0.95), decimals, at(0.99))
}
