package main

import (
	"os"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"code.cloudfoundry.org/cf-hnc/cmd/kubectl-cf/internal/cli"
)

func main() {
	// The plugin reports through its output and errors; controller-runtime's client would
	// otherwise warn on stderr that no logger was set.
	ctrl.SetLogger(logr.Discard())
	// Cobra has printed the error already.
	if err := cli.NewCommand().ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}
