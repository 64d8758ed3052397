package v1alpha1

// Labels and annotations that cf-hnc reads and writes. The label an operator sets is
// BuildConfigLabel; everything else is written by cf-hnc.
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
	// BuildReadyLabel is on space namespaces: "true" when the space can build, else "false",
	// so that `kubectl get ns -l workloads.cloudfoundry.org/build-ready=false` lists the spaces
	// that need an operator.
	BuildReadyLabel = "workloads.cloudfoundry.org/build-ready"
	// OrgNameAnnotation is on org namespaces: the org's display name.
	OrgNameAnnotation = "workloads.cloudfoundry.org/org-name"
	// SpaceNameAnnotation is on space namespaces: the space's display name.
	SpaceNameAnnotation = "workloads.cloudfoundry.org/space-name"
)
