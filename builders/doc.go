// Package builders is where the kpack Builders that apps build with come from. The default
// Builder reconciler makes one kpack ClusterBuilder of each default Builder that an operator
// places in the root or an org namespace, so that a stack update rebuilds one builder image per
// placed Builder however many spaces build with it. A lifecycle that names its own buildpacks or
// stack builds with a dedicated Builder of its space, made from the space's default Builder
// (DesiredDedicatedBuilder); staging applies it and lets it go.
package builders
