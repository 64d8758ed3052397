package latency

import (
	"testing"
	"time"
)

func TestPercentiles(t *testing.T) {
	var samples []time.Duration
	for i := 100; i >= 1; i-- {
		samples = append(samples, time.Duration(i)*time.Millisecond)
	}
	if got, want := Percentiles(samples, 3), "0.050 / 0.095 / 0.099"; got != want {
		t.Errorf("Percentiles(1..100 ms) = %q, want %q (nearest rank)", got, want)
	}
	if got := Percentiles(nil, 3); got != "–" {
		t.Errorf("Percentiles(nil) = %q, want –", got)
	}
}
