package buildpacks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
)

func TestBuildpacks(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "buildpacks (unit)")
}

// serverStandIn is the content of bin/staticfile-server in the buildpacks that specs make.
const serverStandIn = "the staticfile server"

// newBuildpack makes the directory of the buildpack with id at version, laid out as it is
// packaged, with serverStandIn for the server.
func newBuildpack(id, version string) string {
	GinkgoHelper()
	descriptor, err := buildpacks.BuildpackTOML(id, version)
	Expect(err).NotTo(HaveOccurred())
	return newDir(map[string]string{
		"buildpack.toml":        string(descriptor),
		"bin/staticfile-server": serverStandIn,
	})
}

// newDir makes a directory with files, by slash-separated path.
func newDir(files map[string]string) string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
		Expect(os.WriteFile(path, []byte(content), 0o644)).To(Succeed())
	}
	return dir
}

// lifecycleRun is how the lifecycle runs a phase of a buildpack of Buildpack API 0.10:
// arguments and environment (buildpack/detect.go, build.go). The plans are empty, as these
// buildpacks neither provide nor require anything.
type lifecycleRun struct {
	args, env []string
}

func lifecycle(phase, buildpackDir, layersDir string) lifecycleRun {
	GinkgoHelper()
	platform := GinkgoT().TempDir()
	plan := filepath.Join(GinkgoT().TempDir(), "plan.toml")
	Expect(os.WriteFile(plan, nil, 0o600)).To(Succeed())
	env := []string{"CNB_BUILDPACK_DIR=" + buildpackDir, "CNB_PLATFORM_DIR=" + platform}
	if phase == "detect" {
		return lifecycleRun{args: []string{platform, plan}, env: append(env, "CNB_BUILD_PLAN_PATH="+plan)}
	}
	return lifecycleRun{
		args: []string{layersDir, platform, plan},
		env:  append(env, "CNB_BP_PLAN_PATH="+plan, "CNB_LAYERS_DIR="+layersDir),
	}
}

// result is what a phase ends with.
type result struct {
	code           int
	stdout, stderr string
}

// run runs bin/<phase> of the buildpack in buildpackDir on app in-process, as the lifecycle
// runs it; build writes into layers.
func run(phase, buildpackDir, app, layers string) result {
	GinkgoHelper()
	return runAs(filepath.Join(buildpackDir, "bin", phase), app, lifecycle(phase, buildpackDir, layers).env)
}

// runAs runs buildpacks.Run as program in app, with env.
func runAs(program, app string, env []string) result {
	var stdout, stderr strings.Builder
	code := buildpacks.Run(buildpacks.Invocation{
		Program: program,
		AppDir:  app,
		Getenv: func(key string) string {
			for _, kv := range env {
				if k, v, _ := strings.Cut(kv, "="); k == key {
					return v
				}
			}
			return ""
		},
		Stdout: &stdout,
		Stderr: &stderr,
	})
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// process is a process of launch.toml as the lifecycle reads it for Buildpack API 0.9 and
// later (buildpack/files.go).
type process struct {
	Type    string   `toml:"type"`
	Command []string `toml:"command"`
	Args    []string `toml:"args"`
	Default bool     `toml:"default"`
}

// launchProcesses reads back the processes of <layers>/launch.toml, which must hold nothing
// else.
func launchProcesses(layers string) []process {
	GinkgoHelper()
	var launch struct {
		Processes []process `toml:"processes"`
	}
	decodeStrictly(filepath.Join(layers, "launch.toml"), &launch)
	return launch.Processes
}

// decodeStrictly decodes the TOML file at path into v, every key of the file a field of v.
func decodeStrictly(path string, v any) {
	GinkgoHelper()
	metadata, err := toml.DecodeFile(path, v)
	Expect(err).NotTo(HaveOccurred())
	Expect(metadata.Undecoded()).To(BeEmpty())
}
