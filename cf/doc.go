// Package cf is Cloud Foundry on cf-hnc's objects, once, for both of its clients: the CF API
// (cfapi) and kubectl cf. It holds what a Cloud Foundry user or operator does (create an org or
// a space and wait for it, push an app's bits and stage them, run a droplet, start, stop, restart
// and scale an app, apply a manifest, grant a role, read staging lines and an app's output) and
// Cloud Foundry's rules for it (which spaces a user sees, which app a name means, what a process
// change sets, which droplet may run).
//
// Every operation acts with the caller's own client.Client: Kubernetes' RBAC and cf-hnc's
// admission decide what a user may do, as for kubectl. Only Directory reads with the CF API's
// own rights, from its cache, to tell which orgs and spaces a user sees. Errors are typed
// (errors.go): each client says them in its own words, the CF API in Cloud Foundry's.
package cf
