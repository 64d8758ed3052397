package main

// Results is everything one run measured; results.json holds it as it is.
type Results struct {
	Command      string   `json:"command"`
	Machine      Machine  `json:"machine"`
	Orgs         int      `json:"orgs"`
	SpacesPerOrg int      `json:"spacesPerOrg"`
	Workers      int      `json:"workers"`
	HNCFlags     []string `json:"hncFlags"`
	Duration     string   `json:"duration"`
	Failed       string   `json:"failed,omitempty"`
	// Completed are the phases that finished; the figures of the others are zero.
	Completed []string `json:"completed"`

	// Floor is the raw apiserver: orgs × spaces namespace creates, each latency the create call.
	Floor Bulk `json:"floor"`
	// HNC is HNC alone: orgs × spaces anchors below org subnamespaces of a root, each latency
	// from the anchor's create until the copies of the org's Secret and ServiceAccount and of
	// the root's Secret exist in the child, as cf-hnc's spaces need them.
	HNC Bulk `json:"hncAlone"`
	// HNCQuiet is HNC alone, one new anchor at a time once every subnamespace is there and
	// HNC's queues are empty, in turn with cf-hnc's quiet spaces (after both bulks, so that both
	// are measured on the same cluster at the same time). Each latency ends once the namespace
	// is in HNC's tree as well, which a space's BuildReady waits for.
	HNCQuiet Distribution `json:"hncAloneQuiet"`
	// HNCQuietStages split HNCQuiet's latencies where the anchor's create call returned and at
	// the watch arrivals of the anchor and the namespace.
	HNCQuietStages []Distribution `json:"hncAloneQuietStages"`
	// InOrgQuiet and InOrgQuietStages are the same for an anchor in one of cf-hnc's orgs,
	// without a CFSpace, in turn with HNCQuiet and Quiet: HNC's part of a quiet space, in
	// cf-hnc's tree.
	InOrgQuiet       Distribution   `json:"inOrgQuiet"`
	InOrgQuietStages []Distribution `json:"inOrgQuietStages"`
	// HNCIdleSeconds and CFHNCIdleSeconds are how long HNC's queues took to empty after each
	// bulk: from HNC alone's last copy, from cf-hnc's last BuildReady.
	HNCIdleSeconds   float64 `json:"hncIdleSeconds"`
	CFHNCIdleSeconds float64 `json:"cfHNCIdleSeconds"`
	// CFHNC is cf-hnc: orgs × spaces CFSpaces created in bulk, each latency from the create
	// until the bench sees BuildReady=True.
	CFHNC Bulk `json:"cfHNC"`
	// CFHNCEveryCopySeconds is, in the same bulk, from the first create until the last copy
	// of an input (namespace, Secrets, ServiceAccount) arrived in its space: HNC's part.
	CFHNCEveryCopySeconds float64 `json:"cfHNCEveryCopySeconds"`
	// OwnShareBulk and OwnShareQuiet are cf-hnc's own share of each space's latency: BuildReady
	// seen minus the arrival of the last of its inputs.
	OwnShareBulk  Distribution `json:"ownShareBulk"`
	OwnShareQuiet Distribution `json:"ownShareQuiet"`
	// Quiet is one new space at a time with every space present and HNC's queues empty.
	Quiet Distribution `json:"quiet"`
	// QuietStages split Quiet where the CFSpace's create call returned and at the watch
	// arrivals of the anchor, the namespace and the last input.
	QuietStages []Distribution `json:"quietStages"`

	Rotation      []Rotation `json:"rotation"`
	StackNoSpaces StackFix   `json:"stackNoSpaces"`
	Stack         StackFix   `json:"stack"`
	Apps          Apps       `json:"apps"`
	Steady        Steady     `json:"steady"`
	// MemoryNoSpaces is the manager's memory before cf-hnc's phase: running, with no org or
	// space yet.
	MemoryNoSpaces Memory `json:"memoryNoSpaces"`
	// RollingUpdate stops the manager as a Deployment's rollout does (SIGTERM: it releases its
	// lease); Crash kills it (SIGKILL: its successor waits for the lease to expire).
	RollingUpdate Restart `json:"rollingUpdate"`
	Crash         Restart `json:"crash"`
}

// Machine is where the run happened.
type Machine struct {
	Cores     int     `json:"cores"`
	MemoryGiB float64 `json:"memoryGiB"`
	GoVersion string  `json:"goVersion"`
	Date      string  `json:"date"`
}

// Bulk is a bulk creation: each item's latency, and from the first create until the last
// item was done.
type Bulk struct {
	Latency      Distribution `json:"latency"`
	TotalSeconds float64      `json:"totalSeconds"`
	PerSecond    float64      `json:"perSecond"`
	// CreateCalls are the bulk's create calls, each until it returned, and CreatedSeconds from
	// the first call's start until the last one returned: how fast the items arrived.
	CreateCalls    Distribution `json:"createCalls"`
	CreatedSeconds float64      `json:"createdSeconds"`
	// Requests are some of the requests that the apiserver served during the bulk.
	Requests Requests `json:"requests"`
}

// Requests are the apiserver's count of some requests during a bulk, whoever sent them: work
// that HNC v1.1.0 does besides its copies (ADR 9). In a bulk, nothing but HNC deletes
// ServiceAccounts, and only HNC writes from a cache with resourceVersions that can be stale.
type Requests struct {
	// ServiceAccountDeletes are DELETEs of ServiceAccounts; ServiceAccountDeletesNotFound of
	// them found nothing to delete, the others deleted one.
	ServiceAccountDeletes         float64 `json:"serviceAccountDeletes"`
	ServiceAccountDeletesNotFound float64 `json:"serviceAccountDeletesNotFound"`
	// Conflicts are the requests answered 409 Conflict, of any verb and resource: an update
	// with a stale resourceVersion, a create of what exists.
	Conflicts float64 `json:"conflicts"`
}

// Rotation is a credential Secret broken and then fixed, until every space below says so.
type Rotation struct {
	What          string  `json:"what"`
	Spaces        int     `json:"spaces"`
	BrokenSeconds float64 `json:"brokenSeconds"`
	FixedSeconds  float64 `json:"fixedSeconds"`
	// HNCCopiesSeconds is until HNC's copies of the broken Secret all arrived: the floor.
	HNCCopiesSeconds float64 `json:"hncCopiesSeconds"`
	// HNCFixedCopiesSeconds is the same for the fixed Secret.
	HNCFixedCopiesSeconds float64 `json:"hncFixedCopiesSeconds"`
}

// StackFix is a ClusterStack run-image change until every default ClusterBuilder is on it.
type StackFix struct {
	Spaces          int     `json:"spaces"`
	ClusterBuilders int     `json:"clusterBuilders"`
	Seconds         float64 `json:"seconds"`
	// BuilderManifests were pushed below the builder repository; AllManifests anywhere.
	BuilderManifests int `json:"builderManifests"`
	AllManifests     int `json:"allManifests"`
	// Apps ran a droplet rebased on the new run image, and UpToDate, AppsSeconds after the fix.
	Apps        int     `json:"apps"`
	AppsSeconds float64 `json:"appsSeconds"`
	// InstancesSeconds after the fix, the bench saw the last app's web process Running on its
	// rebased droplet, each instance on its image and passing its health check: the fix had
	// reached the running code.
	InstancesSeconds float64 `json:"instancesSeconds"`
	// RebasePod is, for each kpack Build that rebased a droplet onto the new run image and
	// succeeded (kpack's rebases of the apps' Images and cf-hnc's own), its pod's run time on
	// the node: from the pod's start until its completion container finished, in whole
	// seconds. FailedRebases are those that failed.
	RebasePod     Distribution `json:"rebasePod"`
	FailedRebases int          `json:"failedRebases,omitempty"`
}

// Apps are the apps pushed before the stack fix, and how long pushing them all took.
type Apps struct {
	Count         int     `json:"count"`
	DeploySeconds float64 `json:"deploySeconds"`
	// Build is, for each app's CFBuild, from its create call until the bench saw it
	// Succeeded: a real build of the app's source by the CNB lifecycle in a kpack build pod.
	Build Distribution `json:"build"`
	// BuildPod is the run time of each of those builds' pods on the node: from the pod's start
	// until its completion container finished, in whole seconds.
	BuildPod Distribution `json:"buildPod"`
	// Running is, for each app, from the update that set its current droplet until the bench
	// saw its web process Running on it: the instance scheduled, its droplet pulled and
	// started, its health check passed.
	Running Distribution `json:"running"`
}

// Steady is the manager with every space idle, and its cost over the run.
type Steady struct {
	IdleSeconds     float64            `json:"idleSeconds"`
	IdleWrites      map[string]float64 `json:"idleWrites"`
	WritesPerMinute float64            `json:"writesPerMinute"`
	// RunWrites are cf-hnc's writes by verb and kind from its start until the quiet minute.
	RunWrites map[string]float64 `json:"runWrites"`
	// RunReconciles are the manager's reconciles by controller over the same time
	// (controller_runtime_reconcile_total).
	RunReconciles       map[string]float64 `json:"runReconciles"`
	RunReconcileSeconds map[string]float64 `json:"runReconcileSeconds"`
	Memory
	CPUSeconds     float64 `json:"cpuSeconds"`
	IdleCPUSeconds float64 `json:"idleCPUSeconds"`
	// Histogram is cf_hnc_space_build_ready_seconds as the manager reports it.
	HistogramCount       uint64  `json:"histogramCount"`
	HistogramMeanSeconds float64 `json:"histogramMeanSeconds"`
}

// Restart is the manager stopped and started again, then a new space.
type Restart struct {
	ManagerReadySeconds float64 `json:"managerReadySeconds"`
	NewSpaceSeconds     float64 `json:"newSpaceSeconds"`
	// StopToBuildReadySeconds is from the stop until the new space's BuildReady.
	StopToBuildReadySeconds float64 `json:"stopToBuildReadySeconds"`
}

// Memory is a process's resident memory, in MiB.
type Memory struct {
	RSSMiB     float64 `json:"rssMiB"`
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	// AnonMiB are the anonymous pages now: the Go heap, stacks and runtime.
	AnonMiB float64 `json:"anonMiB"`
	// FileMiB are the file pages now: the parts of the manager's binary it has touched, shared
	// and reclaimable, which do not grow with the foundation.
	FileMiB float64 `json:"fileMiB"`
}
