//go:build tools

// Package tools pins the kpack controller.
package tools

import (
	_ "github.com/pivotal/kpack/cmd/controller"
)
