package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// display shows the progress of a build or of an app starting: on a terminal a spinner line with the elapsed time
// under a line per change, elsewhere (a pipe, a file, a CI log) only the lines.
type display interface {
	// show is called at every poll with the progress.
	show(elapsed time.Duration, p progress)
	// finish ends the display.
	finish()
}

// newDisplay chooses the display for out.
func newDisplay(out io.Writer) display {
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &spinner{lines: lines{out: out}, fd: int(f.Fd())}
	}
	return &lines{out: out}
}

// lines prints a line whenever the progress changes.
type lines struct {
	out  io.Writer
	last string
}

func (l *lines) show(elapsed time.Duration, p progress) {
	if text := p.String(); text != l.last {
		l.last = text
		fmt.Fprintf(l.out, "%6s  %s\n", seconds(elapsed), text)
	}
}

func (l *lines) finish() {}

// spinner prints the lines, and below them redraws one line with a spinner and the time.
type spinner struct {
	lines
	fd    int
	frame int
	drawn bool
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (s *spinner) show(elapsed time.Duration, p progress) {
	s.clear()
	s.lines.show(elapsed, p)
	if p.finished {
		return
	}
	s.frame = (s.frame + 1) % len(spinnerFrames)
	line := fmt.Sprintf("%s %6s  %s", spinnerFrames[s.frame], seconds(elapsed), p)
	if width, _, err := term.GetSize(s.fd); err == nil && width > 1 && len([]rune(line)) >= width {
		line = string([]rune(line)[:width-1]) // a wrapped line could not be redrawn in place
	}
	fmt.Fprint(s.out, line)
	s.drawn = true
}

func (s *spinner) finish() { s.clear() }

// clear erases the spinner line.
func (s *spinner) clear() {
	if s.drawn {
		fmt.Fprint(s.out, "\r\033[K")
		s.drawn = false
	}
}

// seconds is a duration in whole seconds, as "12s".
func seconds(d time.Duration) string {
	return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
}
