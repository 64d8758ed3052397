package cli

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"
)

// defaultIgnored are what the cf CLI never uploads, whatever .cfignore says: its own
// sharedaction.DefaultIgnoreLines, read as .cfignore lines before the file's own (so a line of
// .cfignore may re-include one with "!").
var defaultIgnored = []string{
	".cfignore", ".DS_Store", ".git", ".gitignore", ".hg", ".svn", "_darcs", "manifest.yaml", "manifest.yml",
}

// ignoreRules are the rules of a .cfignore file, which has gitignore syntax (gitignore(5)): the
// last rule that matches a path decides; "!" re-includes; a trailing "/" matches directories
// only; a pattern with a slash other than a trailing one is relative to the app's directory,
// one without matches a name at any depth; "*", "?" and "[...]" match within a path segment,
// "**" across segments. As in git, a file in an ignored directory cannot be re-included: the
// walk does not enter ignored directories.
//
// The cf CLI compiles .cfignore with github.com/sabhiram/go-gitignore, which is unmaintained
// since 2021; go-git's matcher would bring twenty modules for sixty lines. This one follows
// gitignore(5), and unit tests hold it to that.
type ignoreRules []ignoreRule

type ignoreRule struct {
	negate  bool
	dirOnly bool
	// segments are the pattern split at "/"; "**" matches any number of segments.
	segments []string
}

// parseIgnore reads .cfignore lines; source names them in errors.
func parseIgnore(r io.Reader, source string) (ignoreRules, error) {
	var rules ignoreRules
	scanner := bufio.NewScanner(r)
	for n := 1; scanner.Scan(); n++ {
		rule, ok, err := parseIgnoreLine(scanner.Text())
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", source, n, err)
		}
		if ok {
			rules = append(rules, rule)
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", source, err)
	}
	return rules, nil
}

// parseIgnoreLine parses one line; ok is false for blank lines and comments.
func parseIgnoreLine(line string) (rule ignoreRule, ok bool, err error) {
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces are dropped unless a backslash quotes the last of them.
	trimmed := strings.TrimRight(line, " ")
	if strings.HasSuffix(trimmed, `\`) && len(trimmed) < len(line) {
		trimmed += " "
	}
	line = trimmed
	if line == "" || strings.HasPrefix(line, "#") {
		return rule, false, nil
	}
	if rest, negated := strings.CutPrefix(line, "!"); negated {
		rule.negate, line = true, rest
	}
	// A leading backslash quotes a "#" or "!" that starts the pattern.
	if strings.HasPrefix(line, `\#`) || strings.HasPrefix(line, `\!`) {
		line = line[1:]
	}
	if rest, dir := strings.CutSuffix(line, "/"); dir {
		rule.dirOnly, line = true, rest
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	if line == "" {
		return rule, false, nil
	}
	rule.segments = strings.Split(line, "/")
	if !anchored {
		rule.segments = append([]string{"**"}, rule.segments...)
	}
	for i, segment := range rule.segments {
		segment = bracketNegation(segment)
		if _, err := path.Match(segment, ""); err != nil {
			return rule, false, fmt.Errorf("pattern %q: %w", line, err)
		}
		rule.segments[i] = segment
	}
	return rule, true, nil
}

// bracketNegation writes gitignore's "[!...]" as path.Match's "[^...]".
func bracketNegation(segment string) string {
	var b strings.Builder
	for i := 0; i < len(segment); i++ {
		b.WriteByte(segment[i])
		switch {
		case segment[i] == '\\' && i+1 < len(segment):
			i++
			b.WriteByte(segment[i])
		case segment[i] == '[' && i+1 < len(segment) && segment[i+1] == '!':
			b.WriteByte('^')
			i++
		}
	}
	return b.String()
}

// ignored says whether the rules exclude a path (slash-separated, relative to the app's
// directory): the last rule that matches it decides.
func (rules ignoreRules) ignored(name string, isDir bool) bool {
	segments := strings.Split(name, "/")
	ignored := false
	for _, rule := range rules {
		if rule.dirOnly && !isDir {
			continue
		}
		if matchSegments(rule.segments, segments) {
			ignored = !rule.negate
		}
	}
	return ignored
}

// matchSegments matches path segments against pattern segments, "**" standing for any number
// of segments; a trailing "**" ("dir/**") matches what is inside, not the directory itself. It
// decides, from the last pattern segment back, which tails of the name each tail of the pattern
// matches: len(pattern) times len(name) steps, however many "**" the pattern has (trying each
// split of the name for each "**" in turn takes exponential time, and a hostile repository's
// .cfignore would hang a push; review 3, N19).
func matchSegments(pattern, name []string) bool {
	// tail[j] says whether the pattern's segments from the one in hand on match name[j:].
	tail := make([]bool, len(name)+1)
	tail[len(name)] = true // no pattern matches no name
	for i := len(pattern) - 1; i >= 0; i-- {
		next := tail
		tail = make([]bool, len(name)+1)
		switch {
		case pattern[i] == "**" && i == len(pattern)-1:
			for j := range name {
				tail[j] = true // one segment or more
			}
		case pattern[i] == "**":
			tail[len(name)] = next[len(name)]
			for j := len(name) - 1; j >= 0; j-- {
				tail[j] = next[j] || tail[j+1] // "**" matches no segment, or name[j] and more
			}
		default:
			for j := range name {
				ok, _ := path.Match(pattern[i], name[j])
				tail[j] = ok && next[j+1]
			}
		}
	}
	return tail[0]
}
