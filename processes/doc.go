// Package processes runs apps. Every app has a web process, which cf-hnc makes with Cloud
// Foundry's defaults (the web process reconciler). Each CFProcess of a started app with a staged
// droplet is a StatefulSet of instances of the droplet's process type (the process reconciler),
// replaced one at a time when the droplet or the process changes, and its status says how the
// instances run, in Cloud Foundry's states, and why those that do not run do not.
package processes
