// Package v1alpha1 holds the Cloud Foundry workload types that cf-hnc reconciles: orgs and
// spaces (modelled as HNC namespaces) and the staging chain from apps to droplets, with the
// rules that belong to the types themselves (a build's staged droplet, an app's display name,
// a package's upload), so that the manager, the CF API and kubectl-cf read them alike.
package v1alpha1
