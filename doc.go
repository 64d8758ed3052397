// Command cf-hnc is the manager: Cloud Foundry orgs and spaces as HNC namespaces, build
// configuration placed once per org and propagated to every space, staging with kpack,
// rebuilds and rollouts of new droplets, and the apps' processes. It reads its flags and runs
// the reconcilers and webhooks that package manager wires; the capabilities live in their own
// packages (builders, staging, upgrades, rollout, processes, and so on).
package main
