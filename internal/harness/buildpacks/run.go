package buildpacks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
)

// Invocation is one run of a buildpack's bin/detect or bin/build by the lifecycle.
type Invocation struct {
	// Program is argv[0], the path of bin/detect or bin/build in the buildpack's directory.
	Program string
	// AppDir is the app's source, the directory that the lifecycle runs both phases in.
	AppDir string
	// Getenv reads the environment, through which the lifecycle passes the buildpack's
	// directories.
	Getenv func(string) string
	// Stdout and Stderr go to the build's log.
	Stdout, Stderr io.Writer
}

// The exit codes of both phases; detect's pass and fail are the lifecycle's (phase/detector.go),
// and it takes any other code, like any non-zero code of build, as the buildpack's error.
const (
	exitPass       = 0
	exitError      = 1
	exitDetectFail = 100
)

// buildpack is what one of the buildpacks does in its two phases.
type buildpack struct {
	// detectFile is the file at the app's root that the buildpack detects.
	detectFile string
	// build checks the app, writes the layers it needs and decides its processes.
	build func(dirs buildDirs) ([]process, error)
}

var buildpacksByID = map[string]buildpack{
	StaticfileID: {detectFile: staticfileName, build: buildStaticfile},
	ProcfileID:   {detectFile: procfileName, build: buildProcfile},
}

// buildDirs are the directories that bin/build works with.
type buildDirs struct {
	app, buildpack, layers string
}

// process is a [[processes]] table of launch.toml. From Buildpack API 0.9 on, command is a
// list that the launcher executes without a shell, and a "direct" key is an error
// (buildpack/files.go).
type process struct {
	Type    string   `toml:"type"`
	Command []string `toml:"command"`
	// Args are the arguments that a user's own would replace. A Cloud Foundry start command is
	// one command line, which Command holds whole, so they stay empty.
	Args    []string `toml:"args"`
	Default bool     `toml:"default,omitempty"`
}

type launchTOML struct {
	Processes []process `toml:"processes"`
}

// layerTOML is <layers>/<layer>.toml; from Buildpack API 0.6 on, the flags sit in its types
// table (buildpack/layermetadata.go).
type layerTOML struct {
	Types layerTypes `toml:"types"`
}

type layerTypes struct {
	Launch bool `toml:"launch"`
}

// Run is the buildpack's bin/detect or bin/build, whichever the base name of inv.Program
// says, and returns its exit code. The buildpack is the one whose buildpack.toml is in
// CNB_BUILDPACK_DIR or, without it, in the parent of Program's directory.
func Run(inv Invocation) int {
	dir := inv.Getenv("CNB_BUILDPACK_DIR")
	if dir == "" {
		dir = filepath.Dir(filepath.Dir(inv.Program))
	}
	info, err := readDescriptor(dir)
	if err != nil {
		return fail(inv.Stderr, err)
	}
	fmt.Fprintf(inv.Stdout, "%s %s\n", info.ID, info.Version)
	bp := buildpacksByID[info.ID]

	switch phase := filepath.Base(inv.Program); phase {
	case "detect":
		found, err := bp.detect(inv.AppDir)
		if err != nil {
			return fail(inv.Stderr, err)
		}
		if !found {
			fmt.Fprintf(inv.Stdout, "no %s at the app's root\n", bp.detectFile)
			return exitDetectFail
		}
		fmt.Fprintf(inv.Stdout, "found %s\n", bp.detectFile)
		return exitPass
	case "build":
		layers := inv.Getenv("CNB_LAYERS_DIR")
		if layers == "" {
			return fail(inv.Stderr, errors.New("CNB_LAYERS_DIR is not set"))
		}
		processes, err := bp.run(buildDirs{app: inv.AppDir, buildpack: dir, layers: layers})
		if err != nil {
			return fail(inv.Stderr, err)
		}
		for _, p := range processes {
			fmt.Fprintf(inv.Stdout, "process %s: %q\n", p.Type, p.Command)
		}
		return exitPass
	default:
		return fail(inv.Stderr, fmt.Errorf("%s runs as bin/detect or bin/build, not as %s", info.ID, phase))
	}
}

// detect reports whether the app has the buildpack's file at its root.
func (bp buildpack) detect(appDir string) (bool, error) {
	info, err := os.Stat(filepath.Join(appDir, bp.detectFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return !info.IsDir(), nil
}

// run builds the app and then writes launch.toml, so that a failed build leaves no processes.
func (bp buildpack) run(dirs buildDirs) ([]process, error) {
	processes, err := bp.build(dirs)
	if err != nil {
		return nil, err
	}
	if err := writeTOML(filepath.Join(dirs.layers, "launch.toml"), launchTOML{Processes: processes}); err != nil {
		return nil, err
	}
	return processes, nil
}

func fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, err)
	return exitError
}

func encodeTOML(v any) ([]byte, error) {
	var out bytes.Buffer
	err := toml.NewEncoder(&out).Encode(v)
	return out.Bytes(), err
}

func writeTOML(path string, v any) error {
	content, err := encodeTOML(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, content, 0o644)
}
