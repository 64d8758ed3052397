// Package upgrades keeps apps on the newest droplet they may run. kpack rebuilds an app's Image
// on its own when its Builder changes (a new stack run image, new buildpacks, a new lifecycle);
// the rebuild reconciler makes a CFBuild of each such build, in the lineage of the droplet it
// rebuilds. The droplet reconciler decides, per app, which droplet it runs: a stack fix (a
// droplet that differs from the running one in its run image only) is deployed under every
// policy, and cf-hnc rebases the running droplet itself when kpack's Image rebases another one
// or none; an upgrade (another stack, other buildpacks, another lifecycle) is deployed under the
// org's Automatic policy and held under Held. The gauges cf_hnc_apps and cf_hnc_app_run_images
// count the apps by where their droplets stand.
//
// What a droplet is made of decides what may happen to an app, not kpack's reason for a
// rebuild: kpack says STACK for any change of its Builder's run image, a move to another stack
// included, and a rebase of kpack's latest image carries whatever buildpacks that image has.
// A rebuilt droplet whose stack id, buildpacks and lifecycle are those of the running droplet
// differs only in its run image, which the stack's ABI contract keeps compatible: it is a stack
// fix. Any other difference is an upgrade, which the org's BuildpackUpgradePolicy decides on.
package upgrades
