//go:build tools

// Package tools pins kind, which `make kind-up` runs to make a cluster in containers.
package tools

import (
	_ "sigs.k8s.io/kind"
)
