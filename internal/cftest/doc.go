// Package cftest holds the fixtures that the suites of cf-hnc's Cloud Foundry layer (cf), its
// two clients (cfapi, cmd/kubectl-cf) and its controllers share, against a real apiserver: a
// space that can build without kpack, apps and their staged droplets as cf-hnc's reconcilers
// leave them, kpack's reports of its builds, and the users of the CF API with real credentials.
// It imports no package of cf-hnc but the API and its helpers, so that each of them can use it
// in its own tests.
package cftest
