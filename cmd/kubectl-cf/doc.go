// kubectl-cf is the kubectl plugin for cf-hnc: operators create and delete orgs and spaces and
// place an org's registry (`kubectl cf create-org`, `create-space`, `set-registry`, `tree`,
// `set-upgrade-policy`, `delete-space`, `delete-org`); developers push apps, see and restage
// their builds, and run them (`push`, `apps`, `app`, `builds`, `restage`, `start`, `stop`,
// `restart`, `scale`, `logs`). Installed on the PATH, kubectl runs it as
// `kubectl cf`, and completes its arguments through the kubectl_complete-cf script beside it.
package main
