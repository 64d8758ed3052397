// Package logtext reads the end of a container's log, as a build step writes it, for a
// one-line message.
package logtext

import (
	"regexp"
	"strings"
)

// ansiEscape matches the terminal colour codes that the CNB lifecycle and kpack write.
var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

// LastLines are the last n non-empty lines of a log, trimmed and without terminal escapes.
func LastLines(log string, n int) []string {
	var lines []string
	for line := range strings.SplitSeq(ansiEscape.ReplaceAllString(log, ""), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return lines[max(0, len(lines)-n):]
}
