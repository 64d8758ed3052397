package buildpacks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

const procfileName = "Procfile"

// processType is what the buildpack spec allows in a process type. Letters are ASCII only:
// the exporter names a file after each type (/cnb/process/<type>).
var processType = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// shellSyntax are the characters that make sh do more than split a command on blanks:
// quoting, expansion, globbing, redirection, pipes, lists, subshells, groups, comments and
// negation.
const shellSyntax = "'\"\\`$*?[]<>|;&(){}~#!"

// shellOnly are the first words of commands that only a shell runs: its reserved words and
// the builtins that no program on PATH stands in for.
var shellOnly = map[string]bool{
	"case": true, "do": true, "done": true, "elif": true, "else": true, "esac": true, "fi": true,
	"for": true, "if": true, "in": true, "then": true, "until": true, "while": true,
	".": true, ":": true, "break": true, "continue": true, "eval": true, "exec": true,
	"exit": true, "export": true, "readonly": true, "return": true, "set": true, "shift": true,
	"times": true, "trap": true, "unset": true,
	"cd": true, "command": true, "ulimit": true, "umask": true,
}

// buildProcfile declares a process for each line of the Procfile.
func buildProcfile(dirs buildDirs) ([]process, error) {
	content, err := os.ReadFile(filepath.Join(dirs.app, procfileName))
	if err != nil {
		return nil, err
	}
	return parseProcfile(string(content))
}

// parseProcfile returns the processes of a Procfile in its order, web the default.
func parseProcfile(content string) ([]process, error) {
	entries, err := parseEntries(procfileName, content, "<type>: <command>")
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s: no processes", procfileName)
	}
	processes := make([]process, 0, len(entries))
	seen := map[string]bool{}
	for _, e := range entries {
		switch {
		case !processType.MatchString(e.key):
			return nil, e.errorf(`invalid process type %q, want letters, digits, ".", "_" and "-" only`, e.key)
		case seen[e.key]:
			return nil, e.errorf("duplicate process type %q", e.key)
		case e.value == "":
			return nil, e.errorf("process type %q has no command", e.key)
		}
		seen[e.key] = true
		processes = append(processes, process{Type: e.key, Command: argv(e.value), Args: []string{}, Default: e.key == "web"})
	}
	return processes, nil
}

// argv is what the launcher executes for command. A simple command runs directly, split on
// blanks, so that signals reach the app rather than a shell; any other runs in the stack's
// POSIX sh.
func argv(command string) []string {
	words := strings.Fields(command)
	// A first word with "=" assigns a variable.
	if strings.ContainsAny(command, shellSyntax) || strings.Contains(words[0], "=") || shellOnly[words[0]] {
		return []string{"sh", "-c", command}
	}
	return words
}
