package main

import (
	"math"
	"slices"
	"time"
)

// Distribution is a set of latencies with the percentiles the issue asks for, in seconds.
type Distribution struct {
	Name    string    `json:"name"`
	Count   int       `json:"count"`
	P50     float64   `json:"p50"`
	P95     float64   `json:"p95"`
	P99     float64   `json:"p99"`
	Max     float64   `json:"max"`
	Samples []float64 `json:"samples"`
}

func distribution(name string, samples []time.Duration) Distribution {
	d := Distribution{Name: name, Count: len(samples)}
	for _, s := range samples {
		d.Samples = append(d.Samples, s.Seconds())
	}
	slices.Sort(d.Samples)
	d.P50, d.P95, d.P99 = percentile(d.Samples, 50), percentile(d.Samples, 95), percentile(d.Samples, 99)
	if len(d.Samples) > 0 {
		d.Max = d.Samples[len(d.Samples)-1]
	}
	return d
}

// percentile is the nearest-rank percentile of sorted samples: with 100 samples p99 is the
// second largest, not an interpolation between samples.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

// stages split latencies at the times between their start and end, one distribution per gap.
type stages struct {
	names   []string
	samples [][]time.Duration
}

func newStages(names ...string) *stages {
	return &stages{names: names, samples: make([][]time.Duration, len(names))}
}

// add takes a start and the end of each stage, in order.
func (s *stages) add(start time.Time, ends ...time.Time) {
	for i, end := range ends {
		s.samples[i] = append(s.samples[i], end.Sub(start))
		start = end
	}
}

func (s *stages) distributions() []Distribution {
	d := make([]Distribution, len(s.names))
	for i, name := range s.names {
		d[i] = distribution(name, s.samples[i])
	}
	return d
}
