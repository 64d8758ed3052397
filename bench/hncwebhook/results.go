package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/bench/internal/latency"
)

// creates are the durations of create calls in the measured space.
type creates struct {
	pods, secrets []time.Duration
}

func (c *creates) timePod(ctx context.Context, k8s client.Client, space string) error {
	start := time.Now()
	if err := k8s.Create(ctx, newPod(space)); err != nil {
		return err
	}
	c.pods = append(c.pods, time.Since(start))
	return nil
}

func (c *creates) timeSecret(ctx context.Context, k8s client.Client, space string) error {
	start := time.Now()
	if err := k8s.Create(ctx, newSecret(space)); err != nil {
		return err
	}
	c.secrets = append(c.secrets, time.Since(start))
	return nil
}

// outcome is what the apiserver answered to a pod and a Secret create while HNC was down.
type outcome struct {
	pod, secret error
}

// results are the figures of one run.
type results struct {
	command string
	cfg     config
	modes   []mode
	// quiet, busy and outage are by mode name.
	quiet, busy map[string]*creates
	outage      map[string]outcome
	// loadUpdates is how often the load changed its Secret while HNC was busy.
	loadUpdates int
}

// markdown is the section of docs/benchmarks.md.
func (r *results) markdown() string {
	var b strings.Builder
	b.WriteString("## HNC's object webhook\n\n")
	fmt.Fprintf(&b, "Written from `%s` (bench/hncwebhook), not by `make bench`. ", r.command)
	fmt.Fprintf(&b, "The local control plane with kube-controller-manager and HNC only (no node: pods stay Pending), on %d cores, %s, %s. ",
		runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format(time.DateOnly))
	fmt.Fprintf(&b, "Create calls, one at a time, in an HNC subnamespace two levels below the root, where a space is; "+
		"the three ways of running the webhook took turns in %d rounds, quiet and then busy. "+
		"Busy: HNC copying a Secret of another org into that org's %d spaces again and again "+
		"(the Secret changed every %s, %d times; HNC's client writes 50 a second). Latencies are p50 / p95 / p99 in seconds.\n\n",
		r.cfg.rounds, r.cfg.loadSpaces, loadInterval, r.loadUpdates)
	b.WriteString("| figure |")
	for _, md := range r.modes {
		fmt.Fprintf(&b, " object webhook %s |", md.name)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" --- |", len(r.modes)) + "\n")
	row := func(figure string, cell func(mode) string) {
		b.WriteString("| " + figure + " |")
		for _, md := range r.modes {
			b.WriteString(" " + cell(md) + " |")
		}
		b.WriteString("\n")
	}
	row("pod create call, quiet", func(md mode) string { return latencies(r.quiet[md.name].pods) })
	row("Secret create call, quiet", func(md mode) string { return latencies(r.quiet[md.name].secrets) })
	row("pod create call, busy", func(md mode) string { return latencies(r.busy[md.name].pods) })
	row("Secret create call, busy", func(md mode) string { return latencies(r.busy[md.name].secrets) })
	row("HNC called for a pod / a Secret", func(md mode) string { return yesNo(md.pods) + " / " + yesNo(md.secrets) })
	row("with HNC down: pod create / Secret create", func(md mode) string {
		o := r.outage[md.name]
		return admitted(o.pod) + " / " + admitted(o.secret)
	})
	b.WriteString("\n")
	for _, md := range r.modes {
		if o := r.outage[md.name]; o.pod != nil {
			fmt.Fprintf(&b, "With the object webhook %s and HNC down, the apiserver answered a pod create: `%s`\n\n", md.name, o.pod)
		}
	}
	return b.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func admitted(err error) string {
	if err != nil {
		return "**refused**"
	}
	return "admitted"
}

// latencies is "p50 / p95 / p99 (n=…)" in seconds, nearest rank.
func latencies(samples []time.Duration) string {
	if len(samples) == 0 {
		return "–"
	}
	return fmt.Sprintf("%s (n=%d)", latency.Percentiles(samples, 4), len(samples))
}
