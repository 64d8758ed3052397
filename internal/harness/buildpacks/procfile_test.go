package buildpacks_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
)

var _ = Describe("the procfile buildpack", func() {
	var buildpack, layers string

	BeforeEach(func() {
		buildpack = newBuildpack(buildpacks.ProcfileID, "1.0.0")
		layers = GinkgoT().TempDir()
	})

	// build builds an app with procfile and returns its processes.
	build := func(procfile string) []process {
		GinkgoHelper()
		got := run("build", buildpack, newDir(map[string]string{"Procfile": procfile}), layers)
		Expect(got.code).To(Equal(0), got.stderr)
		return launchProcesses(layers)
	}

	DescribeTable("detects an app with a Procfile at its root",
		func(files map[string]string, code int) {
			Expect(run("detect", buildpack, newDir(files), "").code).To(Equal(code))
		},
		Entry("a Procfile", map[string]string{"Procfile": "web: ./server\n"}, 0),
		Entry("no Procfile", map[string]string{"server": ""}, 100),
		Entry("a directory named Procfile", map[string]string{"Procfile/web": ""}, 100),
	)

	It("declares a process for each line in order, web the default", func() {
		Expect(build("# processes\r\nworker: ./worker --queue=mail\r\n\r\nweb:./server\r\n")).To(Equal([]process{
			{Type: "worker", Command: []string{"./worker", "--queue=mail"}, Args: []string{}},
			{Type: "web", Command: []string{"./server"}, Args: []string{}, Default: true},
		}))
	})

	It("declares no default process without web", func() {
		Expect(build("worker: ./worker\nclock.v2_x-y: ./clock\n")).To(HaveEach(HaveField("Default", false)))
	})

	DescribeTable("runs a simple command directly and any other in sh",
		func(command string, argv []string) {
			Expect(build("web: " + command + "\n")).To(ConsistOf(HaveField("Command", argv)))
		},
		Entry("a program", "./server", []string{"./server"}),
		Entry("a program on PATH with arguments, tabs and =", "java\t-Dport=8080   -jar app.jar",
			[]string{"java", "-Dport=8080", "-jar", "app.jar"}),
		Entry("a colon in an argument", "./server --listen :8080", []string{"./server", "--listen", ":8080"}),
		Entry("an expansion", "bundle exec rails s -p $PORT", shell("bundle exec rails s -p $PORT")),
		Entry("double quotes", `echo "hello world"`, shell(`echo "hello world"`)),
		Entry("single quotes", `echo 'hello world'`, shell(`echo 'hello world'`)),
		Entry("an escape", `echo hello\ world`, shell(`echo hello\ world`)),
		Entry("a command substitution", "echo `date`", shell("echo `date`")),
		Entry("a glob", "cat *.log", shell("cat *.log")),
		Entry("a bracket glob", "cat log.[0-9]", shell("cat log.[0-9]")),
		Entry("a redirection", "./server > log", shell("./server > log")),
		Entry("a pipe", "./server | tee log", shell("./server | tee log")),
		Entry("a list", "./migrate; ./server", shell("./migrate; ./server")),
		Entry("an and-list", "./migrate && ./server", shell("./migrate && ./server")),
		Entry("a background job", "./worker & ./server", shell("./worker & ./server")),
		Entry("a subshell", "(./server)", shell("(./server)")),
		Entry("a tilde", "~/bin/server", shell("~/bin/server")),
		Entry("a comment", "./server # the app", shell("./server # the app")),
		Entry("a variable assignment", "PORT=9000 ./server", shell("PORT=9000 ./server")),
		Entry("a builtin", "exec ./server", shell("exec ./server")),
		Entry("a directory change", "cd app", shell("cd app")),
	)

	It("writes commands that TOML cannot hold raw as valid TOML", func() {
		command := "echo \"h\u00e9llo \U0001F30D\" 'it''s' \\\\ \"\x1b[1m\x7f\"\ttab"
		Expect(build("web: " + command + "\n")).To(ConsistOf(HaveField("Command", shell(command))))
	})

	DescribeTable("fails the build with one line that names the Procfile's line and the problem",
		func(procfile, message string) {
			expectFailedBuild(run("build", buildpack, newDir(map[string]string{"Procfile": procfile}), layers), layers, message)
		},
		Entry("an empty Procfile", "", "Procfile: no processes"),
		Entry("a Procfile of comments", "# web: ./server\n\n", "Procfile: no processes"),
		Entry("a line that is no process", "web: ./server\nworker ./worker\n",
			`Procfile:2: malformed line "worker ./worker", want "<type>: <command>"`),
		Entry("a line without a type", ": ./server\n", `Procfile:1: malformed line ": ./server", want "<type>: <command>"`),
		Entry("a type with a blank", "web server: ./server\n",
			`Procfile:1: invalid process type "web server", want letters, digits, ".", "_" and "-" only`),
		Entry("a type with a letter beyond ASCII", "w\u00e9b: ./server\n",
			`Procfile:1: invalid process type "w`+"\u00e9"+`b", want letters, digits, ".", "_" and "-" only`),
		Entry("a type twice", "web: ./server\nworker: ./worker\nweb: ./other\n", `Procfile:3: duplicate process type "web"`),
		Entry("a type without a command", "web: ./server\nworker:\n", `Procfile:2: process type "worker" has no command`),
		Entry("a line that is not UTF-8", "web: ./caf\xe9\n", "Procfile:1: not UTF-8 text"),
	)
})

// shell is how the stack's sh runs command.
func shell(command string) []string {
	return []string{"sh", "-c", command}
}
