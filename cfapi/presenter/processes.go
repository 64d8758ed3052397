package presenter

import (
	"net/url"
	"time"

	"k8s.io/utils/ptr"

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
// An instance that is DOWN has only these fields, as Cloud Controller presents one
// (cloud_controller_ng:app/presenters/v3/process_stats_presenter.rb): it runs nowhere, so it has
// no host, quotas or usage, and is neither routable nor not.
type InstanceStats struct {
	Type             string  `json:"type"`
	Index            int32   `json:"index"`
	State            string  `json:"state"`
	Routable         *bool   `json:"routable"`
	Uptime           int64   `json:"uptime"`
	IsolationSegment *string `json:"isolation_segment"`
	Details          *string `json:"details"`
	*Placement
}

// Placement is what CF reports of an instance that is placed: all but a DOWN one.
type Placement struct {
	Host         string `json:"host"`
	MemQuota     int64  `json:"mem_quota"`
	DiskQuota    int64  `json:"disk_quota"`
	LogRateLimit int64  `json:"log_rate_limit"`
	Usage        Usage  `json:"usage"`
}

// Usage is an instance's use of its quotas. cf-hnc does not measure it: every figure is zero.
type Usage struct {
	CPU     float64 `json:"cpu"`
	Mem     int64   `json:"mem"`
	Disk    int64   `json:"disk"`
	LogRate int64   `json:"log_rate"`
}

const mebibyte = 1 << 20

// ForStats presents the instances of a process (cf.Instances) as Cloud Controller does. An
// instance is routable only when it is RUNNING, which only the status says. Its details are the
// reason it is not running, but for Starting, which only restates its state: Cloud Controller
// gives an instance that starts none, and the cf CLI prints any details as an error ("Error
// starting instances") while it waits for a start.
func ForStats(p *cfv1alpha1.CFProcess, instances []cfv1alpha1.InstanceStatus) []InstanceStats {
	stats := make([]InstanceStats, len(instances))
	for i, instance := range instances {
		s := InstanceStats{Type: p.Spec.ProcessType, Index: instance.Index, State: string(instance.State)}
		if instance.Reason != "" && instance.Reason != cfv1alpha1.StartingReason {
			s.Details = &instance.Reason
		}
		if instance.State != cfv1alpha1.InstanceDown {
			s.Routable = ptr.To(instance.State == cfv1alpha1.InstanceRunning)
			s.Placement = &Placement{MemQuota: p.Spec.MemoryMB * mebibyte, DiskQuota: p.Spec.DiskMB * mebibyte, LogRateLimit: noLogRateLimit}
		}
		stats[i] = s
	}
	return stats
}
