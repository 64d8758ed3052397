//go:build tools

// Package tools pins the Cloud Native Buildpacks lifecycle that kpack's build pods run. It has
// its own module because requiring it in kpack's wrapper would move pins shared with kpack.
package tools

import (
	_ "github.com/buildpacks/lifecycle/cmd/launcher"
	_ "github.com/buildpacks/lifecycle/cmd/lifecycle"
)
