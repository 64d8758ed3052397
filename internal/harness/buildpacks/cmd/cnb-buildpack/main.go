// Command cnb-buildpack is bin/detect and bin/build of cf-hnc's buildpacks (package
// buildpacks): the same static binary under both names in each buildpack's directory.
package main

import (
	"os"

	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
)

func main() {
	os.Exit(buildpacks.Run(buildpacks.Invocation{
		Program: os.Args[0],
		// The lifecycle runs both phases in the app's directory (buildpack/detect.go, build.go).
		AppDir: ".",
		Getenv: os.Getenv,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
	}))
}
