package main

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the least time HNC's client throttle allows for n copies (pure logic)", func() {
	manifest := []string{"--max-reconciles=10", "--apiserver-qps-throttle=50"}

	DescribeTable("at the throttle of HNC's flags",
		func(flags []string, n int, want time.Duration) {
			Expect(hncThrottleFloor(flags, n)).To(Equal(want))
		},
		Entry("an org's 102 copies at the manifest's 50 a second: 27 beyond the burst of 75", manifest, 102, 540*time.Millisecond),
		Entry("the root's 1,020 copies at 50 a second", manifest, 1020, 18900*time.Millisecond),
		Entry("no more copies than the burst", manifest, 75, time.Duration(0)),
		Entry("no throttle flag: HNC's default of 50", []string{"--max-reconciles=10"}, 102, 540*time.Millisecond),
		Entry("a throttle of 200, burst 300", []string{"--apiserver-qps-throttle=200"}, 1020, 3600*time.Millisecond),
		Entry("the flag and its value as two arguments", []string{"--apiserver-qps-throttle", "100"}, 1020, 8700*time.Millisecond),
	)

	DescribeTable("refuses a throttle that is not a positive whole number",
		func(value string) {
			_, err := hncThrottleFloor([]string{"--apiserver-qps-throttle=" + value}, 10)
			Expect(err).To(MatchError(ContainSubstring("not a positive whole number")))
		},
		Entry("a word", "fast"),
		Entry("zero", "0"),
		Entry("negative", "-5"),
	)
})
