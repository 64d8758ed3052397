// Package cli is the kubectl-cf plugin: the commands with which an operator creates and deletes
// Cloud Foundry orgs and spaces and places an org's registry credentials once, and with which a
// developer pushes, lists, restages, starts, stops, restarts and scales apps and reads their
// logs. Every command talks to the cluster through controller-runtime's client (and client-go
// for pod logs) and writes to the command's output, so that tests run it in-process.
package cli
