// Package cfapi is a subset of the Cloud Foundry V3 API for the cf CLI, in front of cf-hnc's
// objects: the root document that turns on the CLI's Kubernetes login, /whoami, orgs, spaces
// and the jobs of their deletion, the org and space roles, info, stacks and buildpacks; and
// for cf push, cf restage, cf apps, cf app, cf scale and cf delete: apps and their manifests,
// processes, their scale and their instances, packages, builds, droplets and staging logs.
//
// Every request acts with the caller's own Kubernetes credentials (package auth), so that RBAC
// and cf-hnc's admission decide every read and write as they do for kubectl. The API's own
// credentials only read, from a cache: the orgs, the spaces and the RoleBindings of the CF
// roles, to filter lists by membership (cf.Directory), to wait for a new org or space to
// become ready, and to tell when an org's or a space's deletion is done; and, without a cache,
// kpack's ClusterStacks and ClusterStores, which are the same for every user.
//
// A handler decodes the request, calls package cf, which holds Cloud Foundry's operations and
// rules, and presents the result (package presenter); the errors of all of them are mapped to
// Cloud Foundry's once, in the middleware (errors.go).
//
// What one user may take of a replica is bounded (docs/security.md, review 3): the reviews of
// credentials it has not seen (package auth), the time a request's body and answer may take
// (middleware.go), the lists and uploads in progress at once and the reads made with the API's
// own rights (limits.go), what a list holds (package listing) and what an upload's zip may cost
// (cf.OpenZip).
package cfapi
