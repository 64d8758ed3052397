package registry

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// User is an account of the registry.
type User struct {
	Name     string
	Password string
	// Prefixes are the repository prefixes under which the user may pull and push, each a
	// repository path ending in "/", for example "org-a/" or "org-a/space-1/".
	Prefixes []string
	// PullPrefixes are repository prefixes under which the user may only pull, as a registry
	// grants an org's account read access to an operator's private builder repository.
	PullPrefixes []string
}

// prefixPattern is a repository path and a slash: the slash keeps "org-a/" from also granting
// "org-ab/...".
var prefixPattern = regexp.MustCompile(`^` + repoPattern + `/$`)

func validatePrefix(prefix string) error {
	if !prefixPattern.MatchString(prefix) {
		return fmt.Errorf("%q is not a repository path ending in \"/\"", prefix)
	}
	return nil
}

func validateUser(u User) error {
	// A colon would split the Basic credentials at the wrong place.
	if u.Name == "" || strings.Contains(u.Name, ":") {
		return fmt.Errorf("user name %q must be non-empty and without a colon", u.Name)
	}
	if u.Password == "" {
		return fmt.Errorf("user %q needs a password", u.Name)
	}
	var errs []error
	for _, p := range slices.Concat(u.Prefixes, u.PullPrefixes) {
		if err := validatePrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("user %q: prefix %w", u.Name, err))
		}
	}
	return errors.Join(errs...)
}

// mayAccess is the access rule: anyone, u nil included (anonymous), may pull from repositories
// under publicPrefix; a user may pull and push under its own prefixes, and pull under its pull
// prefixes.
func mayAccess(u *User, publicPrefix, repo string, p permission) bool {
	if p == pull && strings.HasPrefix(repo, publicPrefix) {
		return true
	}
	if u == nil {
		return false
	}
	granted := func(prefix string) bool { return strings.HasPrefix(repo, prefix) }
	return slices.ContainsFunc(u.Prefixes, granted) || (p == pull && slices.ContainsFunc(u.PullPrefixes, granted))
}
