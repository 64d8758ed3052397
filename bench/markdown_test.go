package main

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the report's rows of running apps (pure logic)", func() {
	results := func(completed ...string) *Results {
		return &Results{Completed: completed,
			Apps:  Apps{Count: 100, Running: distribution("droplet set → instance running", []time.Duration{2 * time.Second, 4 * time.Second})},
			Stack: StackFix{Apps: 100, AppsSeconds: 30, InstancesSeconds: 42.3}}
	}

	It("states how long each instance took to run and when every instance ran the fix", func() {
		report := markdown(results(phaseApps, phaseStack), "latencies.png")
		Expect(report).To(ContainSubstring("| per app: droplet set → its instance running it, health check passed (n=2) | 2.000 / 4.000 / 4.000 |"))
		Expect(report).To(ContainSubstring("| stack fix → every instance of 100 apps running its rebased droplet | 42.3 s |"))
	})

	It("says not measured when the phases did not finish", func() {
		Expect(markdown(results(), "latencies.png")).To(ContainSubstring("| stack fix → every instance of 100 apps running its rebased droplet | not measured |"))
	})
})

var _ = Describe("the report written over a previous one (pure logic)", func() {
	It("keeps the sections that other measurements wrote, and replaces its own", func() {
		previous := "# Benchmarks\n\nold figures\n\n## Quotas\n\nquota figures\n\n## Other\n\nmore\n"
		Expect(withOtherSections("# Benchmarks\n\nnew figures\n", previous)).To(Equal(
			"# Benchmarks\n\nnew figures\n\n## Quotas\n\nquota figures\n\n## Other\n\nmore\n"))
		Expect(withOtherSections("# Benchmarks\n\nnew\n\n## Quotas\n\nnewer\n", previous)).To(Equal(
			"# Benchmarks\n\nnew\n\n## Quotas\n\nnewer\n\n## Other\n\nmore\n"))
	})

	It("writes the report alone when there was none", func() {
		Expect(withOtherSections("# Benchmarks\n\nfigures\n", "")).To(Equal("# Benchmarks\n\nfigures\n"))
	})
})
