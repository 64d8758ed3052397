// Package ext stands in for Traefik's nested module pkg/config/dynamic/ext, which its module zip
// leaves out: its two extension types, empty upstream too.
package ext

// HTTP extends Traefik's dynamic HTTP configuration.
type HTTP struct{}

// Router extends Traefik's HTTP router configuration.
type Router struct{}
