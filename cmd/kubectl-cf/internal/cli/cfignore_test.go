package cli

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe(".cfignore rules", func() {
	DescribeTable("exclude and re-include paths as gitignore(5) says",
		func(cfignore string, path string, isDir, ignored bool) {
			rules, err := parseIgnore(strings.NewReader(cfignore), ".cfignore")
			Expect(err).NotTo(HaveOccurred())
			Expect(rules.ignored(path, isDir)).To(Equal(ignored))
		},
		Entry("a name matches at the top", "*.log", "debug.log", false, true),
		Entry("a name matches at any depth", "*.log", "logs/today/debug.log", false, true),
		Entry("a name matches a directory too", "tmp", "src/tmp", true, true),
		Entry("a name does not match a longer one", "tmp", "tmpfiles", false, false),
		Entry("* stays within a segment", "src/*.go", "src/pkg/a.go", false, false),
		Entry("a slash in the middle anchors at the top", "src/*.go", "src/a.go", false, true),
		Entry("an anchored pattern does not match deeper", "src/*.go", "vendor/src/a.go", false, false),
		Entry("a leading slash anchors", "/build", "build", true, true),
		Entry("a leading slash does not match deeper", "/build", "app/build", true, false),
		Entry("a trailing slash matches directories", "cache/", "a/cache", true, true),
		Entry("a trailing slash does not match files", "cache/", "a/cache", false, false),
		Entry("leading **/ matches at any depth", "**/fixtures", "test/unit/fixtures", true, true),
		Entry("/**/ matches no directory", "docs/**/*.md", "docs/a.md", false, true),
		Entry("/**/ matches several directories", "docs/**/*.md", "docs/x/y/a.md", false, true),
		Entry("trailing /** matches what is inside", "node_modules/**", "node_modules/x/index.js", false, true),
		Entry("trailing /** does not match the directory itself", "node_modules/**", "node_modules", true, false),
		Entry("? matches one character", "file?.txt", "file1.txt", false, true),
		Entry("? does not match a slash", "a?b", "a/b", false, false),
		Entry("a class matches", "*.[oa]", "lib.a", false, true),
		Entry("a class negated with !", "*.[!oa]", "lib.a", false, false),
		Entry("a class negated with ! lets others match", "*.[!oa]", "lib.c", false, true),
		Entry("the last matching rule decides: ! re-includes", "*.log\n!keep.log", "keep.log", false, false),
		Entry("the last matching rule decides: a later rule excludes again", "!keep.log\n*.log", "keep.log", false, true),
		Entry("comments and blank lines are no rules", "# *.go\n\n   \n", "main.go", false, false),
		Entry(`\# is a literal #`, `\#notes`, "#notes", false, true),
		Entry(`\! is a literal !`, `\!important`, "!important", false, true),
		Entry("trailing spaces are dropped", "*.tmp   ", "a.tmp", false, true),
		Entry("a backslash keeps a trailing space", `name\ `, "name ", false, true),
		Entry("CRLF line ends are dropped", "*.tmp\r\n", "a.tmp", false, true),
	)

	It("matches a pattern of ten ** against a path thirty directories deep at once, so that a hostile .cfignore cannot hang a push", func(ctx SpecContext) {
		rules, err := parseIgnore(strings.NewReader(strings.Repeat("**/", 10)+"x\n"), ".cfignore")
		Expect(err).NotTo(HaveOccurred())
		deep := strings.Repeat("d/", 30)
		start := time.Now()
		Expect(rules.ignored(deep+"y", false)).To(BeFalse())
		Expect(rules.ignored(deep+"x", false)).To(BeTrue())
		Expect(time.Since(start)).To(BeNumerically("<", 100*time.Millisecond))
	}, SpecTimeout(time.Minute))

	It("refuses a pattern it cannot match, naming its line", func() {
		_, err := parseIgnore(strings.NewReader("*.log\n[z-a\n"), ".cfignore")
		Expect(err).To(MatchError(`.cfignore line 2: pattern "[z-a": syntax error in pattern`))
	})
})
