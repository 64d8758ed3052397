//go:build tools

// Package tools pins the HNC manager and the kubectl-hns plugin.
package tools

import (
	_ "sigs.k8s.io/hierarchical-namespaces/cmd/kubectl"
	_ "sigs.k8s.io/hierarchical-namespaces/cmd/manager"
)
