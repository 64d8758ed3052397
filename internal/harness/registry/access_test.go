package registry

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = DescribeTable("mayAccess",
	func(u *User, repo string, p permission, want bool) {
		Expect(mayAccess(u, "cnb/", repo, p)).To(Equal(want))
	},
	Entry("anonymous pulls a public repository", nil, "cnb/stack/run", pull, true),
	Entry("anonymous pushes to a public repository", nil, "cnb/stack/run", push, false),
	Entry("anonymous pulls a tenant's repository", nil, "org-a/app", pull, false),
	Entry("a user pulls a public repository", orgA(), "cnb/stack/run", pull, true),
	Entry("a user pushes to a public repository", orgA(), "cnb/stack/run", push, false),
	Entry("a user pushes under its prefix", orgA(), "org-a/space-1/app", push, true),
	Entry("a user pulls under its prefix", orgA(), "org-a/app", pull, true),
	Entry("a user pulls another tenant's repository", orgA(), "org-b/app", pull, false),
	Entry("a prefix does not grant a longer name", orgA(), "org-ab/app", push, false),
	Entry("a prefix does not grant its own name", orgA(), "org-a", push, false),
	Entry("a user granted the public prefix pushes there", &User{Prefixes: []string{"cnb/"}}, "cnb/x", push, true),
	Entry("a user pulls under a pull prefix", orgAReadingBuilders(), "builders/default", pull, true),
	Entry("a user pushes under a pull prefix", orgAReadingBuilders(), "builders/default", push, false),
	Entry("a pull prefix does not grant a longer name", orgAReadingBuilders(), "buildersx/default", pull, false),
	Entry("a pull prefix leaves the user's own prefixes", orgAReadingBuilders(), "org-a/app", push, true),
)

var _ = DescribeTable("validateUser",
	func(u User, wantErr string) {
		err := validateUser(u)
		if wantErr == "" {
			Expect(err).NotTo(HaveOccurred())
		} else {
			Expect(err).To(MatchError(ContainSubstring(wantErr)))
		}
	},
	Entry("valid", *orgA(), ""),
	Entry("no prefixes", User{Name: "reader", Password: "p"}, ""),
	Entry("nested prefix", User{Name: "space", Password: "p", Prefixes: []string{"org-a/space-1/"}}, ""),
	Entry("no name", User{Password: "p"}, "non-empty"),
	Entry("colon in name", User{Name: "a:b", Password: "p"}, "without a colon"),
	Entry("no password", User{Name: "a"}, "needs a password"),
	Entry("prefix without slash", User{Name: "a", Password: "p", Prefixes: []string{"org-a"}}, `"org-a" is not a repository path`),
	Entry("root prefix", User{Name: "a", Password: "p", Prefixes: []string{"/"}}, "not a repository path"),
	Entry("upper-case prefix", User{Name: "a", Password: "p", Prefixes: []string{"Org/"}}, "not a repository path"),
	Entry("pull prefix without slash", User{Name: "a", Password: "p", PullPrefixes: []string{"builders"}}, `"builders" is not a repository path`),
)

func orgA() *User {
	return &User{Name: "alice", Password: "secret", Prefixes: []string{"org-a/"}}
}

// orgAReadingBuilders is orgA granted pull on an operator's private builder repository.
func orgAReadingBuilders() *User {
	u := orgA()
	u.PullPrefixes = []string{"builders/"}
	return u
}
