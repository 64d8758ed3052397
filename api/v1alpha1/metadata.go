package v1alpha1

// Labels, annotations and the build environment variable that cf-hnc reads and writes. The
// label an operator sets is BuildConfigLabel; everything else is written by cf-hnc.
const (
	// BuildConfigLabel, set to "true", marks an object that builds in its namespace and in
	// every namespace below it use: a registry credential Secret (kubernetes.io/dockerconfigjson),
	// the build ServiceAccount, or the default kpack Builder. Placed in the root or an org
	// namespace, it propagates to every space; placed in a space, it overrides for that space.
	BuildConfigLabel = "workloads.cloudfoundry.org/build-config"

	// DropletRepositoryPrefixAnnotation on a build-config Secret says under which repository
	// the droplets of its namespace and every namespace below it are pushed, for example
	// "registry.example.com/cf/org-a". A droplet is pushed to "<prefix>/<app guid>".
	DropletRepositoryPrefixAnnotation = "workloads.cloudfoundry.org/droplet-repository-prefix"

	// OrgGUIDLabel is on org and space namespaces: the GUID of the org they belong to.
	OrgGUIDLabel = "workloads.cloudfoundry.org/org-guid"
	// SpaceGUIDLabel is on space namespaces: the GUID of the space.
	SpaceGUIDLabel = "workloads.cloudfoundry.org/space-guid"
	// OrgNameAnnotation is on org namespaces: the org's display name.
	OrgNameAnnotation = "workloads.cloudfoundry.org/org-name"
	// SpaceNameAnnotation is on space namespaces: the space's display name.
	SpaceNameAnnotation = "workloads.cloudfoundry.org/space-name"

	// DisplayNameKeyLabel is on CFOrgs and CFSpaces: DisplayNameKey of the display name, so
	// that a taken name is found with a label selector instead of by reading every org, or
	// every space of an org.
	DisplayNameKeyLabel = "workloads.cloudfoundry.org/display-name-key"

	// DedicatedBuilderLabel is on the kpack Builders that cf-hnc makes for lifecycles that name
	// their own buildpacks or stack.
	DedicatedBuilderLabel = "workloads.cloudfoundry.org/dedicated-builder"
	// DefaultBuilderLabel is on the kpack ClusterBuilders that cf-hnc makes from the default
	// Builders placed in the root or an org namespace.
	DefaultBuilderLabel = "workloads.cloudfoundry.org/default-builder"
	// RebuildOfLabel is on a CFBuild that cf-hnc made for a build kpack started on its own: the
	// name of the CFBuild whose droplet was rebuilt (the first build of the lineage).
	RebuildOfLabel = "workloads.cloudfoundry.org/rebuild-of"
	// KpackBuildLabel is on a CFBuild that cf-hnc made for a rebuild: the kpack Build it follows.
	KpackBuildLabel = "workloads.cloudfoundry.org/kpack-build"
	// KpackBuildNumberLabel is on a rebuild CFBuild: kpack's number of the build, which orders
	// the rebuilds of an app.
	KpackBuildNumberLabel = "workloads.cloudfoundry.org/kpack-build-number"
	// RebuildReasonAnnotation is on a rebuild CFBuild: kpack's reasons, e.g. "STACK".
	RebuildReasonAnnotation = "workloads.cloudfoundry.org/rebuild-reason"
	// BuildGUIDEnv is set in every kpack build's environment to the name of the CFBuild it
	// stages: a new CFBuild changes the Image's spec, so that kpack always builds it, and the
	// kpack Build says which CFBuild it belongs to.
	BuildGUIDEnv = "CF_BUILD_GUID"
)
