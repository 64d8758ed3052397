package buildpacks

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// entry is a "key: value" line of a Staticfile or a Procfile, which Cloud Foundry reads as
// YAML maps of strings.
type entry struct {
	file       string
	line       int
	key, value string
}

// errorf is an error that names the entry's file and line.
func (e entry) errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", e.file, e.line, fmt.Sprintf(format, args...))
}

// parseEntries reads the entries of file, skipping blank lines and comments; form says what
// an entry looks like there.
func parseEntries(file, content, form string) ([]entry, error) {
	var entries []entry
	for i, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, found := strings.Cut(line, ":")
		e := entry{file: file, line: i + 1, key: strings.TrimSpace(key), value: strings.TrimSpace(value)}
		// Values end up in launch.toml, and TOML is UTF-8 text.
		if !utf8.ValidString(line) {
			return nil, e.errorf("not UTF-8 text")
		}
		if !found || e.key == "" {
			return nil, e.errorf("malformed line %q, want %q", line, form)
		}
		entries = append(entries, e)
	}
	return entries, nil
}
