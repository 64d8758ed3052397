package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// markdown is docs/benchmarks.md for a run: every figure beside its floor and the target of
// issue 14, met or missed; png is the latency plot's path relative to the report.
func markdown(r *Results, png string) string {
	var b strings.Builder
	n := r.Orgs * r.SpacesPerOrg
	fmt.Fprintf(&b, "# Benchmarks\n\n")
	fmt.Fprintf(&b, "Written by `make bench` (bench/): cf-hnc side by side with its floors, in one run on one local\n")
	fmt.Fprintf(&b, "control plane (kube-apiserver and etcd, kube-controller-manager, the HNC manager with the flags of\n")
	fmt.Fprintf(&b, "config/hnc, the kpack controller, an in-memory registry, the cf-hnc manager as deployed, and a node:\n")
	fmt.Fprintf(&b, "containerd, runc, kubelet and kube-scheduler, on which kpack's build pods run the CNB lifecycle with\n")
	fmt.Fprintf(&b, "cf-hnc's buildpacks). The apps are static sites, which cf-hnc/staticfile builds.\n")
	fmt.Fprintf(&b, "The targets are those of issue 14, stated for 1,000 spaces; issue 26 asks for the cost of a build\n")
	fmt.Fprintf(&b, "and of a rebase to be stated.\n\n")
	fmt.Fprintf(&b, "- Command: `%s`\n", r.Command)
	fmt.Fprintf(&b, "- Machine: %d cores, %.1f GiB RAM, %s, %s; run took %s\n", r.Machine.Cores, r.Machine.MemoryGiB, r.Machine.GoVersion, r.Machine.Date, r.Duration)
	fmt.Fprintf(&b, "- Size: %d orgs × %d spaces = %d spaces, %d clients creating at once\n", r.Orgs, r.SpacesPerOrg, n, r.Workers)
	fmt.Fprintf(&b, "- HNC flags: `%s`\n", strings.Join(r.HNCFlags, " "))
	if r.Failed != "" {
		fmt.Fprintf(&b, "- **The run stopped early:** %s. Figures after that point are missing (0).\n", r.Failed)
	}
	if n < 1000 {
		fmt.Fprintf(&b, "- **Smaller than the targets' 1,000 spaces:** the verdicts below compare a smaller run with them.\n")
	}
	fmt.Fprintf(&b, "\nLatencies are p50 / p95 / p99 in seconds. Times come from watch events seen by the bench process\n")
	fmt.Fprintf(&b, "(creationTimestamps have whole seconds); cf-hnc's own share is BuildReady seen minus the arrival of\n")
	fmt.Fprintf(&b, "the last of the space's inputs (its namespace as HNC placed and labelled it, HNC's copies of the\n")
	fmt.Fprintf(&b, "org's Secret and ServiceAccount and of the root's Secret). A build or rebase pod's run time is the\n")
	fmt.Fprintf(&b, "exception: from the pod's start until its completion container finished, as the kubelet wrote them\n")
	fmt.Fprintf(&b, "in the pod's status, in whole seconds.\n\n")

	fmt.Fprintf(&b, "| figure | cf-hnc | floor (same run) | target | |\n| --- | --- | --- | --- | --- |\n")
	row := func(phase, figure, value, floor, target string, met *bool) {
		verdict := ""
		if !slices.Contains(r.Completed, phase) {
			value, met = "not measured", nil
		}
		if met != nil {
			verdict = map[bool]string{true: "met", false: "**missed**"}[*met]
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", figure, value, floor, target, verdict)
	}
	is := func(v bool) *bool { return &v }
	pct := func(d Distribution) string { return fmt.Sprintf("%.3f / %.3f / %.3f", d.P50, d.P95, d.P99) }

	row(phaseCFHNC, fmt.Sprintf("new space → BuildReady, quiet (HNC's queues empty), %d spaces present (n=%d)", n, r.Quiet.Count), pct(r.Quiet),
		"HNC alone, quiet anchor → copies "+pct(r.HNCQuiet)+"; HNC in cf-hnc's org, anchor without a CFSpace → copies "+pct(r.InOrgQuiet)+
			"; namespace create "+pct(r.Floor.Latency),
		"p50 ≤ 0.25, p99 ≤ 1", is(r.Quiet.Count > 0 && r.Quiet.P50 <= 0.25 && r.Quiet.P99 <= 1))
	row(phaseCFHNC, "cf-hnc's own share, quiet", pct(r.OwnShareQuiet), "", "p50 ≤ 0.020", is(r.OwnShareQuiet.Count > 0 && r.OwnShareQuiet.P50 <= 0.020))
	row(phaseCFHNC, fmt.Sprintf("new space → BuildReady during the bulk creation (n=%d)", r.CFHNC.Latency.Count), pct(r.CFHNC.Latency),
		"HNC alone anchor → copies "+pct(r.HNC.Latency), "", nil)
	row(phaseCFHNC, "cf-hnc's own share, bulk", pct(r.OwnShareBulk), "", "p50 ≤ 0.020", is(r.OwnShareBulk.Count > 0 && r.OwnShareBulk.P50 <= 0.020))
	row(phaseCFHNC, "after the bulk, until HNC's queues are empty (the quiet spaces wait for it)",
		fmt.Sprintf("%.1f s after the last BuildReady", r.CFHNCIdleSeconds), fmt.Sprintf("HNC alone: %.1f s after the last copy", r.HNCIdleSeconds), "", nil)
	row(phaseCFHNC, fmt.Sprintf("bulk: %d spaces created → all BuildReady", n),
		fmt.Sprintf("%.1f s (%.1f spaces/s); every input copied at %.1f s", r.CFHNC.TotalSeconds, r.CFHNC.PerSecond, r.CFHNCEveryCopySeconds),
		fmt.Sprintf("HNC alone %.1f s (%.1f/s); %d namespaces created in %.1f s", r.HNC.TotalSeconds, r.HNC.PerSecond, r.Floor.Latency.Count, r.Floor.TotalSeconds),
		fmt.Sprintf("≤ 1.2 × HNC alone = %.1f s", 1.2*r.HNC.TotalSeconds),
		is(r.CFHNC.TotalSeconds > 0 && r.CFHNC.TotalSeconds <= 1.2*r.HNC.TotalSeconds))
	row(phaseCFHNC, "bulk: create calls, p50 / p95 / p99; from the first call until the last returned",
		fmt.Sprintf("CFSpace %s; %.1f s", pct(r.CFHNC.CreateCalls), r.CFHNC.CreatedSeconds),
		fmt.Sprintf("HNC alone, anchor %s; %.1f s", pct(r.HNC.CreateCalls), r.HNC.CreatedSeconds), "", nil)
	requests := func(q Requests) string {
		return fmt.Sprintf("%.0f ServiceAccount DELETEs (%.0f found nothing); %.0f answered 409 Conflict",
			q.ServiceAccountDeletes, q.ServiceAccountDeletesNotFound, q.Conflicts)
	}
	row(phaseCFHNC, "bulk: HNC's extra requests (ADR 9)", requests(r.CFHNC.Requests), "HNC alone: "+requests(r.HNC.Requests), "", nil)
	for _, rot := range r.Rotation {
		limit := 0.5 // an org's 100 spaces (and the few quiet ones added to it)
		if rot.Spaces >= 500 {
			limit = 5
		}
		row(phaseRotation, fmt.Sprintf("rotation: %s broken → %d spaces say so / fixed → they say so", rot.What, rot.Spaces),
			fmt.Sprintf("%.2f s / %.2f s", rot.BrokenSeconds, rot.FixedSeconds),
			fmt.Sprintf("HNC's copies updated in %.2f s / %.2f s; %s", rot.HNCCopiesSeconds, rot.HNCFixedCopiesSeconds,
				throttleFloor(r.HNCFlags, rot.Spaces)),
			fmt.Sprintf("≤ %.1f s (≤ 0.5 s at 100 spaces, ≤ 5 s at 1,000)", limit),
			is(rot.BrokenSeconds <= limit && rot.FixedSeconds <= limit))
	}
	row(phaseStack, fmt.Sprintf("stack fix → every default ClusterBuilder on the new run image (%d spaces, %d ClusterBuilders)", r.Stack.Spaces, r.Stack.ClusterBuilders),
		fmt.Sprintf("%.1f s", r.Stack.Seconds), fmt.Sprintf("the same with no space: %.1f s", r.StackNoSpaces.Seconds), "≤ 10 s",
		is(r.Stack.Seconds > 0 && r.Stack.Seconds <= 10))
	row(phaseStack, "builder manifests written per stack fix",
		fmt.Sprintf("%d (all repositories: %d) with %d spaces", r.Stack.BuilderManifests, r.Stack.AllManifests, r.Stack.Spaces),
		fmt.Sprintf("%d (all: %d) with %d spaces", r.StackNoSpaces.BuilderManifests, r.StackNoSpaces.AllManifests, r.StackNoSpaces.Spaces),
		"independent of the number of spaces", is(r.Stack.BuilderManifests > 0 && r.Stack.BuilderManifests == r.StackNoSpaces.BuilderManifests))
	row(phaseApps, fmt.Sprintf("%d apps pushed across the orgs, each with its droplet current and its instance running", r.Apps.Count),
		fmt.Sprintf("%.1f s", r.Apps.DeploySeconds), "", "", nil)
	row(phaseApps, fmt.Sprintf("per build: CFBuild created → Succeeded, a real build (n=%d)", r.Apps.Build.Count), pct(r.Apps.Build),
		fmt.Sprintf("its kpack build pod's run time (n=%d): %s", r.Apps.BuildPod.Count, pct(r.Apps.BuildPod)), "stated (issue 26)", nil)
	row(phaseApps, fmt.Sprintf("per app: droplet set → its instance running it, health check passed (n=%d)", r.Apps.Running.Count),
		pct(r.Apps.Running), "", "", nil)
	row(phaseStack, fmt.Sprintf("stack fix → %d deployed apps on rebased droplets, UpToDate", r.Stack.Apps),
		fmt.Sprintf("%.1f s", r.Stack.AppsSeconds), "", "≤ 60 s", is(r.Stack.Apps > 0 && r.Stack.AppsSeconds <= 60))
	row(phaseStack, fmt.Sprintf("stack fix → every instance of %d apps running its rebased droplet", r.Stack.Apps),
		fmt.Sprintf("%.1f s", r.Stack.InstancesSeconds), "", "stated (issue 24)", nil)
	failed := ""
	if r.Stack.FailedRebases > 0 {
		failed = fmt.Sprintf("; **%d rebases failed**", r.Stack.FailedRebases)
	}
	row(phaseStack, fmt.Sprintf("per rebase after the stack fix: its kpack rebase pod's run time (n=%d)", r.Stack.RebasePod.Count),
		pct(r.Stack.RebasePod)+failed, "", "stated (issue 26)", nil)
	row(phaseSteady, fmt.Sprintf("writes by cf-hnc per minute, %d idle spaces", n), fmt.Sprintf("%.1f", r.Steady.WritesPerMinute), "", "0",
		is(r.Steady.IdleSeconds > 0 && r.Steady.WritesPerMinute == 0))
	row(phaseSteady, "manager memory (RSS now / peak; now: anonymous + binary's file pages)",
		fmt.Sprintf("%.0f / %.0f MiB; %.0f + %.0f MiB", r.Steady.RSSMiB, r.Steady.PeakRSSMiB, r.Steady.AnonMiB, r.Steady.FileMiB),
		fmt.Sprintf("the same manager with no space: %.0f MiB; %.0f + %.0f MiB", r.MemoryNoSpaces.RSSMiB, r.MemoryNoSpaces.AnonMiB, r.MemoryNoSpaces.FileMiB),
		"≤ 64 MiB", is(r.Steady.PeakRSSMiB > 0 && r.Steady.PeakRSSMiB <= 64))
	row(phaseSteady, "manager CPU (whole run until the quiet minute / in it)", fmt.Sprintf("%.1f s / %.2f s", r.Steady.CPUSeconds-r.Steady.IdleCPUSeconds, r.Steady.IdleCPUSeconds), "", "", nil)
	for _, restart := range []struct {
		how string
		r   Restart
	}{{"rolling update (SIGTERM)", r.RollingUpdate}, {"crash (SIGKILL)", r.Crash}} {
		row(phaseRestart, "restart by "+restart.how+": manager stopped → ready; then a new space → BuildReady",
			fmt.Sprintf("%.1f s; %.2f s (stop → BuildReady %.1f s)", restart.r.ManagerReadySeconds, restart.r.NewSpaceSeconds, restart.r.StopToBuildReadySeconds),
			"", "new space ≤ 5 s", is(restart.r.ManagerReadySeconds > 0 && restart.r.NewSpaceSeconds <= 5))
	}

	fmt.Fprintf(&b, "\nWhere a quiet space's time goes, between the watch arrivals the bench sees (p50 / p95 in seconds):\n\n| stage | p50 | p95 |\n| --- | --- | --- |\n")
	for _, d := range slices.Concat(r.QuietStages, r.InOrgQuietStages, r.HNCQuietStages) {
		fmt.Fprintf(&b, "| %s | %.3f | %.3f |\n", d.Name, d.P50, d.P95)
	}
	fmt.Fprintf(&b, "\nThe manager's own histogram `cf_hnc_space_build_ready_seconds` (from creationTimestamp, whole seconds)\n")
	fmt.Fprintf(&b, "observed %d spaces, mean %.2f s.\n\n", r.Steady.HistogramCount, r.Steady.HistogramMeanSeconds)
	fmt.Fprintf(&b, "cf-hnc's writes over the run, until the quiet minute (`cf_hnc_api_writes_total`):\n\n| verb | kind | writes |\n| --- | --- | --- |\n")
	for _, k := range slices.Sorted(maps.Keys(r.Steady.RunWrites)) {
		verb, kind, _ := strings.Cut(k, " ")
		fmt.Fprintf(&b, "| %s | %s | %.0f |\n", verb, kind, r.Steady.RunWrites[k])
	}
	fmt.Fprintf(&b, "\nThe manager's reconciles over the same time (`controller_runtime_reconcile_total`, `_time_seconds`):\n\n| controller | reconciles | seconds in all |\n| --- | --- | --- |\n")
	for _, c := range slices.Sorted(maps.Keys(r.Steady.RunReconciles)) {
		fmt.Fprintf(&b, "| %s | %.0f | %.1f |\n", c, r.Steady.RunReconciles[c], r.Steady.RunReconcileSeconds[c])
	}
	fmt.Fprintf(&b, "\n![latency distributions](%s)\n\n", png)
	fmt.Fprintf(&b, "results.json (every sample) is in the run's `-out` directory; the components' logs in\n")
	fmt.Fprintf(&b, "`.local/bench-run/logs`.\n")
	return b.String()
}

// throttleFloor says how long HNC's client throttle makes a copy into each of n spaces take at
// least.
func throttleFloor(hncFlags []string, n int) string {
	floor, err := hncThrottleFloor(hncFlags, n)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("HNC's client throttle allows no less than %.2f s", floor.Seconds())
}

// withOtherSections appends to report the "## " sections of the previous report that it does
// not write itself: other measurements (bench/quotas) keep their place in docs/benchmarks.md
// when make bench writes the rest anew.
func withOtherSections(report, previous string) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(report, "\n") + "\n")
	for _, section := range strings.SplitAfter(previous, "\n## ")[1:] {
		section = strings.TrimSuffix(section, "\n## ")
		heading, _, _ := strings.Cut(section, "\n")
		if !strings.Contains(report, "\n## "+heading+"\n") {
			b.WriteString("\n## " + strings.TrimRight(section, "\n") + "\n")
		}
	}
	return b.String()
}
