//go:build tools

// Package tools pins Traefik, the Gateway API implementation that the local control plane runs
// as cf-hnc's embedded default gateway (docs/adr: "Routes through a Gateway"). hack/tools.sh builds its image from this module
// (hack/tools/ko/go-image), against a copy of lego whose DNS providers with SDKs the Go module
// proxy does not serve are left out (Traefik's ACME DNS challenge, which cf-hnc does not use).
//
// The replaces: Traefik's nested module pkg/config/dynamic/ext is missing from its module zip
// (./ext stands in: two empty extension types); the fork of go-http-auth that Traefik v3.7.13
// pins is not served, so the one Traefik pinned up to v3.7.10 is used (only the BasicAuth and
// DigestAuth middlewares use it, and cf-hnc configures neither).
package tools

import _ "github.com/traefik/traefik/v3/cmd/traefik"
