//go:build tools

// Package tools pins kpack's controller and webhook and the commands of the images its build
// pods run (hack/tools/ko/kpack-images builds all of them with kpack's pins from this module).
package tools

import (
	_ "github.com/pivotal/kpack/cmd/build-init"
	_ "github.com/pivotal/kpack/cmd/build-waiter"
	_ "github.com/pivotal/kpack/cmd/completion"
	_ "github.com/pivotal/kpack/cmd/controller"
	_ "github.com/pivotal/kpack/cmd/rebase"
	_ "github.com/pivotal/kpack/cmd/webhook"
)
