package presenter

import (
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

// Version is the Cloud Controller API version that the root document reports. The cf CLI v9
// warns below 3.160.0 and switches `cf apps` to an embedded process list at 3.211.0; the build
// metadata is ignored when it compares.
const Version = "3.160.0+cf-hnc"

// Root is the root document (GET /). cf_on_k8s makes the cf CLI log in with a kubeconfig user
// and send that user's credentials.
type Root struct {
	Links   map[string]*RootLink `json:"links"`
	CFOnK8s bool                 `json:"cf_on_k8s"`
}

// RootLink is a link of the root document, with the API version in its meta.
type RootLink struct {
	Href string            `json:"href"`
	Meta map[string]string `json:"meta,omitempty"`
}

// ForRoot presents the root document of the API at base. The services that the cf CLI reaches
// only through UAA are null; login and log_cache name the API itself.
func ForRoot(base *url.URL) Root {
	self := base.String()
	return Root{
		CFOnK8s: true,
		Links: map[string]*RootLink{
			"self":                {Href: self},
			"cloud_controller_v3": {Href: href(base, "v3"), Meta: map[string]string{"version": Version}},
			"login":               {Href: self},
			"log_cache":           {Href: self},
			"uaa":                 nil,
			"logging":             nil,
			"routing":             nil,
			"network_policy_v1":   nil,
			"app_ssh":             nil,
		},
	}
}

// V3 is the document of GET /v3: links to the resources the API serves.
type V3 struct {
	Links map[string]Link `json:"links"`
}

// ForV3 presents GET /v3.
func ForV3(base *url.URL) V3 {
	return V3{Links: map[string]Link{
		"self":          {Href: href(base, "v3")},
		"organizations": {Href: href(base, "v3", "organizations")},
		"spaces":        {Href: href(base, "v3", "spaces")},
		"roles":         {Href: href(base, "v3", "roles")},
		"info":          {Href: href(base, "v3", "info")},
		"stacks":        {Href: href(base, "v3", "stacks")},
		"buildpacks":    {Href: href(base, "v3", "buildpacks")},
	}}
}

// Whoami is the user as GET /whoami reports them (cli:resources/user_resource.go).
type Whoami struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// Org is a CF organization.
type Org struct {
	Resource
	Suspended     bool                    `json:"suspended"`
	Relationships map[string]Relationship `json:"relationships"`
	Links         map[string]Link         `json:"links"`
}

// ForOrg presents a CFOrg: its name is the org's GUID. cf-hnc has no quotas: the quota
// relationship is null.
func ForOrg(org *cfv1alpha1.CFOrg, base *url.URL) Org {
	return Org{
		Resource:      resource(org, org.Spec.DisplayName, org.Status.Conditions),
		Relationships: map[string]Relationship{"quota": {}},
		Links:         map[string]Link{"self": {Href: href(base, "v3", "organizations", org.Name)}},
	}
}

// Space is a CF space.
type Space struct {
	Resource
	Relationships map[string]Relationship `json:"relationships"`
	Links         map[string]Link         `json:"links"`
}

// ForSpace presents a CFSpace: its name is the space's GUID, its namespace the org's.
func ForSpace(space *cfv1alpha1.CFSpace, base *url.URL) Space {
	return Space{
		Resource:      resource(space, space.Spec.DisplayName, space.Status.Conditions),
		Relationships: map[string]Relationship{"organization": relationship(space.Namespace), "quota": {}},
		Links: map[string]Link{
			"self":         {Href: href(base, "v3", "spaces", space.Name)},
			"organization": {Href: href(base, "v3", "organizations", space.Namespace)},
		},
	}
}

// The states of a job (cli:api/cloudcontroller/ccv3/job.go).
const (
	JobProcessing = "PROCESSING"
	JobComplete   = "COMPLETE"
	JobFailed     = "FAILED"
)

// Job is an asynchronous operation that the cf CLI polls until it is COMPLETE or FAILED.
type Job struct {
	GUID      string           `json:"guid"`
	CreatedAt *time.Time       `json:"created_at"`
	UpdatedAt *time.Time       `json:"updated_at"`
	Operation string           `json:"operation"`
	State     string           `json:"state"`
	Errors    []*cferror.Error `json:"errors"`
	Warnings  []Warning        `json:"warnings"`
	Links     map[string]Link  `json:"links"`
}

// Warning is a job's warning.
type Warning struct {
	Detail string `json:"detail"`
}

// ForJob presents a job in state, started at started (nil if unknown), failed with failure
// (nil unless the state is JobFailed).
func ForJob(guid, operation, state string, started *metav1.Time, failure *cferror.Error, base *url.URL) Job {
	var at *time.Time
	if started != nil {
		utc := started.UTC()
		at = &utc
	}
	job := Job{
		GUID: guid, CreatedAt: at, UpdatedAt: at, Operation: operation, State: state,
		Errors: []*cferror.Error{}, Warnings: []Warning{},
		Links: map[string]Link{"self": {Href: href(base, "v3", "jobs", guid)}},
	}
	if failure != nil {
		job.Errors = append(job.Errors, failure)
	}
	return job
}
