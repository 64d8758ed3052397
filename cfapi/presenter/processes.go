package presenter

import (
	"cmp"
	"net/url"
	"slices"
	"time"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
)

// Process is a CF process: a process type of an app and how it runs.
type Process struct {
	GUID          string                  `json:"guid"`
	CreatedAt     time.Time               `json:"created_at"`
	UpdatedAt     time.Time               `json:"updated_at"`
	Type          string                  `json:"type"`
	Command       *string                 `json:"command"`
	Instances     int32                   `json:"instances"`
	MemoryInMB    int64                   `json:"memory_in_mb"`
	DiskInMB      int64                   `json:"disk_in_mb"`
	LogRateLimit  int64                   `json:"log_rate_limit_in_bytes_per_second"`
	HealthCheck   HealthCheck             `json:"health_check"`
	Metadata      Metadata                `json:"metadata"`
	Relationships map[string]Relationship `json:"relationships"`
	Links         map[string]Link         `json:"links"`
}

// HealthCheck is a process's health check.
type HealthCheck struct {
	Type string          `json:"type"`
	Data HealthCheckData `json:"data"`
}

// HealthCheckData are the settings of a health check; an endpoint only for http.
type HealthCheckData struct {
	Timeout  int32   `json:"timeout"`
	Endpoint *string `json:"endpoint,omitempty"`
}

// ListFields are the fields a list filters and orders by.
func (p Process) ListFields() listing.Fields {
	return listing.Fields{GUID: p.GUID, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, Labels: p.Metadata.Labels}
}

// noLogRateLimit is CF's log rate limit of a process without one.
const noLogRateLimit = -1

// ForProcess presents a CFProcess: its name is the process's GUID. A process without a command
// of its own runs its droplet's, and has a null command, as a process that CF has not staged.
func ForProcess(p *cfv1alpha1.CFProcess, base *url.URL) Process {
	r := resource(p, "", p.Status.Conditions)
	process := Process{
		GUID: r.GUID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Metadata: r.Metadata,
		Type:         p.Spec.ProcessType,
		Instances:    p.Spec.Instances,
		MemoryInMB:   p.Spec.MemoryMB,
		DiskInMB:     p.Spec.DiskMB,
		LogRateLimit: noLogRateLimit,
		HealthCheck: HealthCheck{
			Type: string(p.Spec.HealthCheck.Type),
			Data: HealthCheckData{Timeout: p.Spec.HealthCheck.TimeoutSeconds},
		},
		Relationships: map[string]Relationship{"app": relationship(p.Spec.AppRef.Name)},
		Links: map[string]Link{
			"self":  {Href: href(base, "v3", "processes", p.Name)},
			"scale": {Href: href(base, "v3", "processes", p.Name, "actions", "scale"), Method: "POST"},
			"app":   {Href: href(base, "v3", "apps", p.Spec.AppRef.Name)},
			"space": {Href: href(base, "v3", "spaces", p.Namespace)},
			"stats": {Href: href(base, "v3", "processes", p.Name, "stats")},
		},
	}
	if p.Spec.Command != "" {
		process.Command = &p.Spec.Command
	}
	if p.Spec.HealthCheck.Type == cfv1alpha1.HTTPHealthCheck {
		process.HealthCheck.Data.Endpoint = &p.Spec.HealthCheck.Endpoint
	}
	return process
}

// InstanceStats is what CF reports of one instance of a process (cli:api/cloudcontroller/ccv3/process_instance.go).
type InstanceStats struct {
	Type             string  `json:"type"`
	Index            int32   `json:"index"`
	State            string  `json:"state"`
	Routable         bool    `json:"routable"`
	Host             string  `json:"host"`
	Uptime           int64   `json:"uptime"`
	MemQuota         int64   `json:"mem_quota"`
	DiskQuota        int64   `json:"disk_quota"`
	LogRateLimit     int64   `json:"log_rate_limit"`
	IsolationSegment *string `json:"isolation_segment"`
	Details          *string `json:"details"`
	Usage            Usage   `json:"usage"`
}

// Usage is an instance's use of its quotas. cf-hnc does not measure it: every figure is zero.
type Usage struct {
	CPU     float64 `json:"cpu"`
	Mem     int64   `json:"mem"`
	Disk    int64   `json:"disk"`
	LogRate int64   `json:"log_rate"`
}

// downState is the state of an instance that should run and that cf-hnc has not reported yet,
// as Cloud Controller fills in the instances that Diego does not report.
const downState = "DOWN"

const mebibyte = 1 << 20

// ForStats presents the instances of a process in the order of their indexes: each that cf-hnc
// reported in its status, in the state reported there, and each index below desired that it
// has not reported yet as DOWN. An instance is routable only when it is RUNNING, which only
// the status says.
func ForStats(p *cfv1alpha1.CFProcess, desired int32) []InstanceStats {
	reported := map[int32]cfv1alpha1.InstanceStatus{}
	for _, instance := range p.Status.Instances {
		reported[instance.Index] = instance
	}
	for index := range desired {
		if _, ok := reported[index]; !ok {
			reported[index] = cfv1alpha1.InstanceStatus{Index: index, State: downState}
		}
	}
	stats := make([]InstanceStats, 0, len(reported))
	for _, instance := range reported {
		s := InstanceStats{
			Type: p.Spec.ProcessType, Index: instance.Index, State: string(instance.State),
			Routable:     instance.State == cfv1alpha1.InstanceRunning,
			MemQuota:     p.Spec.MemoryMB * mebibyte,
			DiskQuota:    p.Spec.DiskMB * mebibyte,
			LogRateLimit: noLogRateLimit,
		}
		if instance.Reason != "" {
			s.Details = &instance.Reason
		}
		stats = append(stats, s)
	}
	slices.SortFunc(stats, func(a, b InstanceStats) int { return cmp.Compare(a.Index, b.Index) })
	return stats
}
