package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"code.cloudfoundry.org/cf-hnc/bench/internal/latency"
)

// results are the figures of one run.
type results struct {
	command string
	spaces  int

	rqPlaced, hrqPlaced                placement
	rqNewSpaces, plainNewSpaces        spaceTimes
	hrqNewSpaces, plainNewSpacesHRQ    spaceTimes
	rqCreates, plainCreates            createTimes
	hrqCreates, plainCreatesHRQ        createTimes
	hncBefore, hncAfterRQ, hncAfterHRQ memory
}

// markdown is the section of docs/benchmarks.md.
func (r *results) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Quotas\n\n")
	fmt.Fprintf(&b, "Written from `%s` (bench/quotas), not by `make bench`. ", r.command)
	fmt.Fprintf(&b, "The local control plane without a node, on %d cores, %s, %s. ", runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format(time.DateOnly))
	b.WriteString("A ResourceQuota is config/samples/space_quota.yaml placed once in an org; the HRQ is a HierarchicalResourceQuota " +
		"in another org of as many spaces, with the sample's limits times the org's namespaces (the same room in each, as a sum), with HNC restarted as its hrq variant runs it (`--enable-hrq` and the variant's two webhooks). " +
		"\"In force\" means that kube-controller-manager has written every limit and its usage into the quota's status: " +
		"the apiserver enforces only those, so until then a new space is not bounded. Latencies are p50 / p95 / p99 in seconds.\n\n")
	b.WriteString("| figure | ResourceQuota propagated by HNC | HRQ (HNC's hrq variant) | no quota (same run) |\n| --- | --- | --- | --- |\n")
	fmt.Fprintf(&b, "| one quota placed in an org of %d spaces → in every namespace of it / in force there | %s / %s (%d namespaces) | %s / %s (%d namespaces) | |\n",
		r.spaces, seconds(r.rqPlaced.copied), seconds(r.rqPlaced.enforced), r.rqPlaced.namespaces,
		seconds(r.hrqPlaced.copied), seconds(r.hrqPlaced.enforced), r.hrqPlaced.namespaces)
	fmt.Fprintf(&b, "| new space: CFSpace created → quota in force (n=%d) | %s | %s | |\n",
		len(r.rqNewSpaces.enforced), percentiles(r.rqNewSpaces.enforced), percentiles(r.hrqNewSpaces.enforced))
	fmt.Fprintf(&b, "| new space: CFSpace created → BuildReady (n=%d) | %s | %s | %s; %s |\n",
		len(r.rqNewSpaces.buildReady), percentiles(r.rqNewSpaces.buildReady), percentiles(r.hrqNewSpaces.buildReady),
		percentiles(r.plainNewSpaces.buildReady), percentiles(r.plainNewSpacesHRQ.buildReady))
	fmt.Fprintf(&b, "| Secret create call in a space (n=%d) | %s | %s | %s; %s |\n",
		len(r.rqCreates.secrets), percentiles(r.rqCreates.secrets), percentiles(r.hrqCreates.secrets),
		percentiles(r.plainCreates.secrets), percentiles(r.plainCreatesHRQ.secrets))
	fmt.Fprintf(&b, "| CFApp create call in a space (n=%d) | %s | %s | %s; %s |\n",
		len(r.rqCreates.apps), percentiles(r.rqCreates.apps), percentiles(r.hrqCreates.apps),
		percentiles(r.plainCreates.apps), percentiles(r.plainCreatesHRQ.apps))
	fmt.Fprintf(&b, "| HNC memory, RSS / heap in use, at rest with %d spaces | %s (before any quota: %s) | %s | |\n\n",
		2*r.spaces+1, r.hncAfterRQ, r.hncBefore, r.hncAfterHRQ)
	b.WriteString("The \"no quota\" column holds the same figures for an org without a quota, measured alternately with " +
		"the ResourceQuota's (first) and then with the HRQ's (second, after HNC's restart). HNC's memory with the HRQ is that of " +
		"the restarted process.\n")
	return b.String()
}

func (m memory) String() string {
	return fmt.Sprintf("%.0f / %.0f MiB", m.rss/(1<<20), m.heap/(1<<20))
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// percentiles is "p50 / p95 / p99" in seconds, nearest rank.
func percentiles(samples []time.Duration) string { return latency.Percentiles(samples, 3) }
