// Package manager wires cf-hnc's reconcilers and webhooks into a controller-runtime manager.
// main.go and the integration suites share it, so that the suites run what ships.
package manager
