//go:build tools

// Package tools pins the kpack controller and the commands of the images its build pods run
// (hack/tools/ko/kpack-images builds those with kpack's pins from this module).
package tools

import (
	_ "github.com/pivotal/kpack/cmd/build-init"
	_ "github.com/pivotal/kpack/cmd/build-waiter"
	_ "github.com/pivotal/kpack/cmd/completion"
	_ "github.com/pivotal/kpack/cmd/controller"
	_ "github.com/pivotal/kpack/cmd/rebase"
)
