// Package staging stages Cloud Foundry builds with kpack. The CFBuild reconciler resolves a
// build's lifecycle (the build's, else the app's, else the space's default Builder), applies a
// dedicated kpack Builder for a lifecycle that names its own buildpacks or stack, keeps one
// kpack Image per app pointed at the right Builder, package and registry, within the build
// limits, and mirrors the kpack Build into the CFBuild's status, with the droplet once it
// succeeded. An app stages one build at a time. The validating webhooks refuse lifecycles the
// cluster cannot build.
//
// Which CFBuild a kpack Build stages, or whose droplet it rebuilds, is decided here too
// (rebuilds.go): staging takes a droplet from a rebuild only if its kpack Build bears it out, and
// package upgrades makes the rebuilds' CFBuilds by the same rule.
package staging
