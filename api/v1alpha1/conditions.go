package v1alpha1

// Condition types.
const (
	// ReadyCondition on CFOrg and CFSpace: the namespace exists and carries its labels.
	ReadyCondition = "Ready"
	// BuildReadyCondition on CFSpace: everything a build needs is present in the space and valid.
	BuildReadyCondition = "BuildReady"
	// StagingCondition on CFBuild: a kpack build for it is running.
	StagingCondition = "Staging"
	// SucceededCondition on CFBuild: True with a droplet, False when staging failed.
	SucceededCondition = "Succeeded"
	// DropletCurrentCondition on CFApp: True while the app runs its newest deployable droplet
	// (or kpack rebuilds it); False while a droplet waits for a restage, a rebuild failed, or
	// no stack fix can reach the app.
	DropletCurrentCondition = "DropletCurrent"
	// RunningCondition on CFProcess: every desired instance runs the app's current droplet
	// and passes its health check (also when none is desired: a stopped app runs nothing).
	RunningCondition = "Running"
)

// Reasons of the Ready condition of orgs and spaces.
const (
	NamespaceReadyReason  = "NamespaceReady"
	AnchorPendingReason   = "AnchorPending"
	AnchorConflictReason  = "AnchorConflict"
	AnchorForbiddenReason = "AnchorForbidden"
	// AnchorRefusedReason: HNC refuses the anchor's labels or annotations, which it accepts
	// only when it runs with the --managed-namespace-label and --managed-namespace-annotation
	// flags of config/hnc.
	AnchorRefusedReason  = "AnchorRefused"
	DuplicateNameReason  = "DuplicateName"
	WrongNamespaceReason = "WrongNamespace"
	DeletingReason       = "Deleting"
	OrgNotReadyReason    = "OrgNotReady"
	// InvalidNameReason: the object's name cannot name what cf-hnc makes from it (a namespace,
	// a kpack Image). Admission refuses such names; this reports one that got past it.
	InvalidNameReason = "InvalidName"
)

// Reasons of the BuildReady condition of spaces. When several things are wrong, the reason is
// the first of this list that applies, and the message names every problem.
const (
	BuildConfigCompleteReason            = "BuildConfigComplete"
	NamespaceNotReadyReason              = "NamespaceNotReady"
	BuildConfigNameConflictReason        = "BuildConfigNameConflict"
	PropagationBlockedReason             = "PropagationBlocked"
	InvalidDockerConfigReason            = "InvalidDockerConfig"
	RegistryCredentialsMissingReason     = "RegistryCredentialsMissing"
	DropletRepositoryMissingReason       = "DropletRepositoryMissing"
	InvalidDropletRepositoryReason       = "InvalidDropletRepository"
	AmbiguousBuildConfigReason           = "AmbiguousBuildConfig"
	ServiceAccountMissingReason          = "ServiceAccountMissing"
	ServiceAccountSecretMissingReason    = "ServiceAccountSecretMissing"
	CredentialsNotOnServiceAccountReason = "CredentialsNotOnServiceAccount"
	BuilderMissingReason                 = "BuilderMissing"
	BuilderNotReadyReason                = "BuilderNotReady"
	PropagationPendingReason             = "PropagationPending"
)

// Reasons of the Staging and Succeeded conditions of CFBuilds. A waiting build is neither
// staging nor failed; Succeeded False carries kpack's own reason when it gives one.
const (
	WaitingReason           = "Waiting"
	QueuedReason            = "Queued"
	BuildScheduledReason    = "BuildScheduled"
	BuildRunningReason      = "BuildRunning"
	BuildSucceededReason    = "BuildSucceeded"
	BuildFailedReason       = "BuildFailed"
	KpackBuildMissingReason = "KpackBuildMissing"
	// NotARebuildReason: a CFBuild is marked as a rebuild (its labels name a kpack Build), but
	// that kpack Build does not bear it out: another app, lineage, number or reasons. cf-hnc
	// takes no droplet from it, so no app moves to it.
	NotARebuildReason = "NotARebuild"
	// DropletInvalidReason: kpack built a droplet whose image configuration or process list
	// goes beyond what cf-hnc reads (ValidateProcessTypes): the build fails instead of filling
	// every client's memory with it.
	DropletInvalidReason = "DropletInvalid"
)

// Reasons of the DropletCurrent condition of CFApps, and of the event of an upgrade.
const (
	UpToDateReason        = "UpToDate"
	NoDropletReason       = "NoDroplet"
	DropletMissingReason  = "DropletMissing"
	RebuildingReason      = "Rebuilding"
	RebuildFailedReason   = "RebuildFailed"
	UpgradeHeldReason     = "UpgradeHeld"
	DropletUpgradedReason = "DropletUpgraded"
	// NoRunImageReason: no builder the app builds with gives a run image for the stack of the
	// droplet it runs any more (its Builder moved to another stack), so no stack fix can reach
	// it; a restage moves it to the stack its Builder gives now.
	NoRunImageReason = "NoRunImage"
)

// Reasons of the Running condition of CFProcesses and of the instances they list. When
// instances differ, the condition gives the first reason of this list that one has.
const (
	// InstancesRunningReason: every desired instance runs (or none is desired).
	InstancesRunningReason = "InstancesRunning"
	// AppStoppedReason: the app is stopped, and no instance runs.
	AppStoppedReason = "AppStopped"
	// NoDropletToRunReason: the app is started, but has no staged droplet to run yet.
	NoDropletToRunReason = "NoDroplet"
	// ImagePullFailedReason: the node cannot pull the droplet (gone from the registry, or its
	// pull credentials refused).
	ImagePullFailedReason = "ImagePullFailed"
	// OutOfMemoryReason: the instance used more memory than its limit and was killed.
	OutOfMemoryReason = "OutOfMemory"
	// CrashLoopReason: the instance exits, or fails its health check, again and again; the
	// platform restarts it with a growing delay.
	CrashLoopReason = "CrashLoop"
	// QuotaExceededReason: a ResourceQuota of the space (pods, memory or disk) has no room
	// for the instance, which is not made until the quota has room.
	QuotaExceededReason = "QuotaExceeded"
	// UnschedulableReason: no node has room for the instance (memory, disk).
	UnschedulableReason = "Unschedulable"
	// StartingReason: instances are being placed, pulled, started or rolled to a new droplet.
	StartingReason = "Starting"
)

// Reasons of events that no condition carries.
const (
	// RebuildStartedReason: kpack started a rebuild of an app, and cf-hnc made its CFBuild.
	RebuildStartedReason = "RebuildStarted"
	// RebaseStartedReason: cf-hnc started a rebase of the droplet an app runs onto the latest
	// run image of its stack, because kpack's Image rebases another droplet or none.
	RebaseStartedReason = "RebaseStarted"
	// RebuildNameTakenReason: kpack rebuilt an app, but another CFBuild holds the name of its
	// rebuild (the kpack Build's), so cf-hnc cannot make the rebuild until it is deleted.
	RebuildNameTakenReason = "RebuildNameTaken"
)
