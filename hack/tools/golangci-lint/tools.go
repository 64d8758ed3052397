//go:build tools

// Package tools pins golangci-lint, which checks the code's habits (.golangci.yml).
package tools

import (
	_ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
)
