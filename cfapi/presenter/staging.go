package presenter

import (
	"net/url"
	"strconv"
	"time"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
)

// The states of a package that cf-hnc has: it has no bits until the upload, and is READY as
// soon as the upload names its image.
const (
	PackageAwaitingUpload = "AWAITING_UPLOAD"
	PackageReady          = "READY"
)

// Package is a CF package.
type Package struct {
	GUID          string                  `json:"guid"`
	CreatedAt     time.Time               `json:"created_at"`
	UpdatedAt     time.Time               `json:"updated_at"`
	Type          string                  `json:"type"`
	Data          PackageData             `json:"data"`
	State         string                  `json:"state"`
	Relationships map[string]Relationship `json:"relationships"`
	Metadata      Metadata                `json:"metadata"`
	Links         map[string]Link         `json:"links"`
}

// PackageData is a bits package's data. cf-hnc keeps the bits as an image named by digest, and
// no checksum of the zip.
type PackageData struct {
	Checksum Checksum `json:"checksum"`
	Error    *string  `json:"error"`
}

// Checksum is a CF checksum; a nil value is none.
type Checksum struct {
	Type  string  `json:"type"`
	Value *string `json:"value"`
}

// ListFields are the fields a list filters and orders by.
func (p Package) ListFields() listing.Fields {
	return listing.Fields{GUID: p.GUID, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, Labels: p.Metadata.Labels}
}

// packageState is a CFPackage's state: READY once its bits are uploaded.
func packageState(pkg *cfv1alpha1.CFPackage) string {
	if pkg.Uploaded() {
		return PackageReady
	}
	return PackageAwaitingUpload
}

// ForPackage presents a CFPackage: its name is the package's GUID, its namespace the app's.
func ForPackage(pkg *cfv1alpha1.CFPackage, base *url.URL) Package {
	r := resource(pkg, "", nil)
	self := func(elem ...string) Link {
		return Link{Href: href(base, append([]string{"v3", "packages", pkg.Name}, elem...)...)}
	}
	upload := self("upload")
	upload.Method = "POST"
	return Package{
		GUID: r.GUID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Metadata: r.Metadata,
		Type:          string(pkg.Spec.Type),
		Data:          PackageData{Checksum: Checksum{Type: "sha256"}},
		State:         packageState(pkg),
		Relationships: map[string]Relationship{"app": relationship(pkg.Spec.AppRef.Name)},
		Links: map[string]Link{
			"self":   self(),
			"upload": upload,
			"app":    {Href: href(base, "v3", "apps", pkg.Spec.AppRef.Name)},
		},
	}
}

// Build is a CF build.
type Build struct {
	GUID              string                  `json:"guid"`
	CreatedAt         time.Time               `json:"created_at"`
	UpdatedAt         time.Time               `json:"updated_at"`
	CreatedBy         map[string]string       `json:"created_by"`
	State             string                  `json:"state"`
	StagingMemoryInMB *int                    `json:"staging_memory_in_mb"`
	StagingDiskInMB   *int                    `json:"staging_disk_in_mb"`
	Error             *string                 `json:"error"`
	Lifecycle         Lifecycle               `json:"lifecycle"`
	Package           RelationshipData        `json:"package"`
	Droplet           *RelationshipData       `json:"droplet"`
	Relationships     map[string]Relationship `json:"relationships"`
	Metadata          Metadata                `json:"metadata"`
	Links             map[string]Link         `json:"links"`
}

// ForBuild presents a CFBuild: its name is the build's GUID and, once it staged, its droplet's.
// Its lifecycle is the build's own: empty buildpacks and stack stage with the app's.
func ForBuild(build *cfv1alpha1.CFBuild, base *url.URL) Build {
	r := resource(build, "", build.Status.Conditions)
	state, succeeded := build.State()
	b := Build{
		GUID: r.GUID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Metadata: r.Metadata,
		CreatedBy:     map[string]string{},
		State:         string(state),
		Lifecycle:     lifecycleOf(build.Spec.Lifecycle),
		Package:       RelationshipData{GUID: build.Spec.PackageRef.Name},
		Relationships: map[string]Relationship{"app": relationship(build.Spec.AppRef.Name)},
		Links: map[string]Link{
			"self": {Href: href(base, "v3", "builds", build.Name)},
			"app":  {Href: href(base, "v3", "apps", build.Spec.AppRef.Name)},
		},
	}
	switch state {
	case cfv1alpha1.BuildStaged:
		b.Droplet = &RelationshipData{GUID: build.Name}
		b.Links["droplet"] = Link{Href: href(base, "v3", "droplets", build.Name)}
	case cfv1alpha1.BuildFailed:
		b.Error = &succeeded.Message
	}
	return b
}

func lifecycleOf(l cfv1alpha1.Lifecycle) Lifecycle {
	buildpacks := l.Data.Buildpacks
	if buildpacks == nil {
		buildpacks = []string{}
	}
	return Lifecycle{Type: string(cfv1alpha1.BuildpackLifecycle), Data: LifecycleData{Buildpacks: buildpacks, Stack: l.Data.Stack}}
}

// Droplet is a CF droplet.
type Droplet struct {
	GUID              string                  `json:"guid"`
	CreatedAt         time.Time               `json:"created_at"`
	UpdatedAt         time.Time               `json:"updated_at"`
	State             string                  `json:"state"`
	Error             *string                 `json:"error"`
	Lifecycle         Lifecycle               `json:"lifecycle"`
	ExecutionMetadata string                  `json:"execution_metadata"`
	ProcessTypes      map[string]string       `json:"process_types"`
	Checksum          *Checksum               `json:"checksum"`
	Buildpacks        []DropletBuildpack      `json:"buildpacks"`
	Stack             string                  `json:"stack"`
	Image             string                  `json:"image"`
	Relationships     map[string]Relationship `json:"relationships"`
	Metadata          Metadata                `json:"metadata"`
	Links             map[string]Link         `json:"links"`
}

// DropletBuildpack is a buildpack that contributed to a droplet.
type DropletBuildpack struct {
	Name          string  `json:"name"`
	BuildpackName string  `json:"buildpack_name"`
	Version       string  `json:"version"`
	DetectOutput  *string `json:"detect_output"`
}

// ListFields are the fields a list filters and orders by.
func (d Droplet) ListFields() listing.Fields {
	return listing.Fields{GUID: d.GUID, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, Labels: d.Metadata.Labels}
}

// ForDroplet presents the droplet of a staged CFBuild (StagedDroplet): its GUID is the build's,
// its image the droplet image by digest, its stack the name that cf.DropletStack gives it. A
// droplet is created when its build succeeds.
func ForDroplet(build *cfv1alpha1.CFBuild, stack string, base *url.URL) Droplet {
	r := resource(build, "", build.Status.Conditions)
	droplet := build.StagedDroplet()
	d := Droplet{
		GUID: r.GUID, CreatedAt: r.UpdatedAt, UpdatedAt: r.UpdatedAt, Metadata: r.Metadata,
		State:         string(cfv1alpha1.BuildStaged),
		Lifecycle:     lifecycleOf(build.Spec.Lifecycle),
		ProcessTypes:  map[string]string{},
		Buildpacks:    []DropletBuildpack{},
		Stack:         stack,
		Image:         droplet.Registry.Image,
		Relationships: map[string]Relationship{"app": relationship(build.Spec.AppRef.Name)},
		Links: map[string]Link{
			"self":                   {Href: href(base, "v3", "droplets", build.Name)},
			"app":                    {Href: href(base, "v3", "apps", build.Spec.AppRef.Name)},
			"assign_current_droplet": {Href: href(base, "v3", "apps", build.Spec.AppRef.Name, "relationships", "current_droplet"), Method: "PATCH"},
		},
	}
	for _, p := range droplet.ProcessTypes {
		d.ProcessTypes[p.Type] = p.Command
	}
	for _, bp := range droplet.Buildpacks {
		d.Buildpacks = append(d.Buildpacks, DropletBuildpack{Name: bp.ID, BuildpackName: bp.ID, Version: bp.Version})
	}
	return d
}

// LogCacheInfo is log-cache's GET /api/v1/info.
type LogCacheInfo struct {
	Version  string `json:"version"`
	VMUptime string `json:"vm_uptime"`
}

// ForLogCacheInfo presents the log-cache subset that cf-hnc serves: the staging lines of apps.
func ForLogCacheInfo() LogCacheInfo { return LogCacheInfo{Version: "2.11.4+cf-hnc", VMUptime: "0"} }

// Envelope is a log-cache envelope of a log line (loggregator's v2 envelope, as JSON): the cf
// CLI prints those tagged source_type STG while it stages an app.
type Envelope struct {
	Timestamp  string            `json:"timestamp"`
	SourceID   string            `json:"source_id"`
	InstanceID string            `json:"instance_id"`
	Tags       map[string]string `json:"tags"`
	Log        EnvelopeLog       `json:"log"`
}

// EnvelopeLog is an envelope's log line: its payload is base64 (JSON bytes), its type OUT or ERR.
type EnvelopeLog struct {
	Payload []byte `json:"payload"`
	Type    string `json:"type"`
}

// Envelopes is log-cache's answer to GET /api/v1/read/:source-id.
type Envelopes struct {
	Envelopes struct {
		Batch []Envelope `json:"batch"`
	} `json:"envelopes"`
}

// ForStagingLines presents staging lines of the app sourceID as log-cache envelopes, tagged
// source_type STG.
func ForStagingLines(sourceID string, lines []cf.StagingLine) Envelopes {
	var e Envelopes
	e.Envelopes.Batch = make([]Envelope, 0, len(lines))
	for _, l := range lines {
		logType := "OUT"
		if l.Error {
			logType = "ERR"
		}
		e.Envelopes.Batch = append(e.Envelopes.Batch, Envelope{
			Timestamp: strconv.FormatInt(l.Time.UnixNano(), 10), SourceID: sourceID, InstanceID: strconv.Itoa(l.Step),
			Tags: map[string]string{"source_type": "STG"},
			Log:  EnvelopeLog{Payload: []byte(l.Message), Type: logType},
		})
	}
	return e
}
