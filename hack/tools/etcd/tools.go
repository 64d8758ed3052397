//go:build tools

// Package tools pins the etcd server that the local control plane runs.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
