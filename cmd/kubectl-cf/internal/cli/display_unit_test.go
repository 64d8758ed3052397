package cli

import (
	"bytes"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("showing a build's progress", func() {
	queued := progress{state: stagingState, reason: "Queued", detail: "waiting for build b"}
	running := progress{state: stagingState, reason: "BuildRunning", detail: "kpack build a-build-1, step 3/6 (detect)"}
	staged := progress{state: stagedState, reason: "BuildSucceeded", detail: "droplet r/a@sha256:1", finished: true}

	It("prints a line per change where the output is not a terminal", func() {
		var out bytes.Buffer
		d := newDisplay(&out)
		Expect(d).To(BeAssignableToTypeOf(&lines{}))
		d.show(0, queued)
		d.show(400*time.Millisecond, queued)
		d.show(1600*time.Millisecond, running)
		d.show(2*time.Second, staged)
		d.finish()
		Expect(out.String()).To(Equal(
			"    0s  STAGING  Queued: waiting for build b\n" +
				"    2s  STAGING  BuildRunning: kpack build a-build-1, step 3/6 (detect)\n" +
				"    2s  STAGED   BuildSucceeded: droplet r/a@sha256:1\n"))

		r, w, err := os.Pipe()
		Expect(err).NotTo(HaveOccurred())
		defer r.Close()
		defer w.Close()
		Expect(newDisplay(w)).To(BeAssignableToTypeOf(&lines{}), "a pipe is no terminal")
	})

	It("redraws a spinner line with the elapsed time below the lines on a terminal, and clears it at the end", func() {
		var out bytes.Buffer
		s := &spinner{lines: lines{out: &out}, fd: -1}
		s.show(0, queued)
		s.show(time.Second, queued)
		s.show(2*time.Second, staged)
		s.finish()
		Expect(out.String()).To(Equal(
			"    0s  STAGING  Queued: waiting for build b\n" +
				"⠙     0s  STAGING  Queued: waiting for build b" +
				"\r\033[K" + "⠹     1s  STAGING  Queued: waiting for build b" +
				"\r\033[K" + "    2s  STAGED   BuildSucceeded: droplet r/a@sha256:1\n"))
	})
})
