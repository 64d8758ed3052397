// Package standinkubelet is the stand-in kubelet of the test harness, and the only simulated
// part of it.
//
// The harness runs the real kpack controller against a real kube-apiserver but has no kubelet,
// so the pods that kpack creates for Builds would stay Pending forever. The stand-in watches
// those pods, and no others, and completes them the way the buildpack lifecycle and kpack's own
// binaries would inside them, once they are scheduled: a pod with scheduling gates (cf-hnc
// paces rebuilds with one) waits until its last gate is gone, as no kubelet sees it before.
//
//   - A build pod (init containers prepare, analyze, detect, restore, build, export): prepare
//     checks push access to the app image tag and read access to the run image, and reads the
//     source image (Build.spec.source.registry.image). Detect does what the lifecycle's detector
//     does with the builder image's order: the first group (composite buildpacks expanded)
//     whose non-optional buildpacks all detect; a buildpack detects an app with a file at its
//     root that matches a pattern of the detect-files next to its bin/detect, read from its
//     layer in the builder image (the synthetic buildpacks carry one; without, it detects
//     every app). Export pushes the app image: the run image's layers, one layer
//     holding the source under /workspace, and the labels the lifecycle writes and kpack and
//     Cloud Foundry read (io.buildpacks.lifecycle.metadata, io.buildpacks.build.metadata with
//     buildpacks and process types, io.buildpacks.project.metadata, and the run image's
//     io.buildpacks.stack.* labels). Process types come from a Procfile at the source's root.
//   - A rebase pod (a Build whose reason is exactly STACK; init container rebase): pushes the
//     previous app image's own layers on top of the new run image, as the lifecycle's rebaser
//     does.
//   - Both: the completion container terminates with kpack's build metadata in its termination
//     message, read back from the registry the way kpack's completion binary reads it. The
//     pod's status, written through the pods/status subresource, is what kpack turns into the
//     Build's status.
//
// No buildpack runs and nothing is compiled. Registry access uses the credentials the pod would
// mount: the Secrets named by its containers' credential arguments, read through the API and
// collected with kpack's own pkg/dockercreds, as kpack's binaries collect them. The builder
// image is pulled as a kubelet pulls it, with the pod's imagePullSecrets (matched by
// go-containerregistry's authn/kubernetes, the kubelet's rules), or else its ServiceAccount's,
// which the ServiceAccount admission plugin (disabled by envtest) would have copied into the
// pod; if that fails the pod stays Pending with ErrImagePull and is retried.
// Every pod takes at least a second, so that kpack can order an Image's Builds by their
// creation timestamps. The stand-in connects to loopback addresses only.
//
// Tests make builds fail with Kubelet.FailBuilds (an Image's builds) and
// Kubelet.FailBuildsMatching (build pods by label, also of Builds without an Image).
package standinkubelet
