package cf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// manifest is an app manifest as the cf CLI sends it (cli:util/manifestparser). It is read
// leniently: the keys that cf-hnc does not act on are ignored (path, and keys it does not
// know), with a warning for those that ask for what an app then lacks (warnings).
type manifest struct {
	Applications []manifestApp `json:"applications"`
}

// manifestApp is one application of a manifest. Its top-level process settings are its web
// process's.
type manifestApp struct {
	Name       string            `json:"name"`
	Buildpacks *[]string         `json:"buildpacks"`
	Stack      *string           `json:"stack"`
	Lifecycle  string            `json:"lifecycle"`
	Docker     json.RawMessage   `json:"docker"`
	Processes  []manifestProcess `json:"processes"`
	Env        json.RawMessage   `json:"env"`
	Services   json.RawMessage   `json:"services"`
	Sidecars   json.RawMessage   `json:"sidecars"`
	Metadata   json.RawMessage   `json:"metadata"`
	manifestRoutes
	manifestProcess
}

// manifestRoutes are what a manifest asks of an app's routes. cf push asks for the default
// route unless --no-route, and --random-route for a random one.
type manifestRoutes struct {
	Routes       json.RawMessage `json:"routes"`
	DefaultRoute bool            `json:"default-route"`
	RandomRoute  bool            `json:"random-route"`
	NoRoute      bool            `json:"no-route"`
}

// asksForRoute says whether the manifest asks for a route to the app; no-route wins, as in CF.
func (r manifestRoutes) asksForRoute() bool {
	return !r.NoRoute && (r.DefaultRoute || r.RandomRoute || isSet(r.Routes))
}

// isSet says whether a manifest key has a value.
func isSet(value json.RawMessage) bool { return value != nil && string(value) != "null" }

// manifestProcess are the settings of a process in a manifest.
type manifestProcess struct {
	Type                    string     `json:"type"`
	Instances               *int32     `json:"instances"`
	Memory                  *megabytes `json:"memory"`
	DiskQuota               *megabytes `json:"disk_quota"`
	Command                 *string    `json:"command"`
	HealthCheckType         *string    `json:"health-check-type"`
	HealthCheckHTTPEndpoint *string    `json:"health-check-http-endpoint"`
	Timeout                 *int32     `json:"timeout"`
}

// megabytes is a manifest's memory or disk size: "256M", "1G", "1024MB", or a number of
// megabytes.
type megabytes int64

var sizePattern = regexp.MustCompile(`^(?i)\s*([0-9]+)\s*(M|MB|G|GB|T|TB)\s*$`)

// UnmarshalJSON reads a size.
func (m *megabytes) UnmarshalJSON(data []byte) error {
	var n int64
	if err := json.Unmarshal(data, &n); err == nil {
		*m = megabytes(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("a size is a number with a unit, as 256M or 1G: %s", data)
	}
	match := sizePattern.FindStringSubmatch(s)
	if match == nil {
		return fmt.Errorf("size %q is not a number with one of the units M, MB, G, GB, T, TB", s)
	}
	n, err := strconv.ParseInt(match[1], 10, 64)
	if err != nil {
		return fmt.Errorf("size %q: %w", s, err)
	}
	switch strings.ToUpper(match[2])[0] {
	case 'G':
		n *= 1024
	case 'T':
		n *= 1024 * 1024
	}
	*m = megabytes(n)
	return nil
}

// merge adds to c the settings of a manifest process, which win over c's.
func merge(c ProcessChange, p manifestProcess) (ProcessChange, error) {
	c.Instances = override(p.Instances, c.Instances)
	if p.Memory != nil {
		c.MemoryMB = ptr.To(int64(*p.Memory))
	}
	if p.DiskQuota != nil {
		c.DiskMB = ptr.To(int64(*p.DiskQuota))
	}
	c.Command = override(p.Command, c.Command)
	c.Endpoint = override(p.HealthCheckHTTPEndpoint, c.Endpoint)
	c.Timeout = override(p.Timeout, c.Timeout)
	if t := p.HealthCheckType; t != nil {
		switch *t {
		case "none": // CF's old name of process
			c.HealthCheck = ptr.To(cfv1alpha1.ProcessHealthCheck)
		case string(cfv1alpha1.PortHealthCheck), string(cfv1alpha1.HTTPHealthCheck), string(cfv1alpha1.ProcessHealthCheck):
			c.HealthCheck = ptr.To(cfv1alpha1.HealthCheckType(*t))
		default:
			return c, fmt.Errorf("health-check-type %q is not one of port, http, process", *t)
		}
	}
	return c, nil
}

// override is a, if it is set, else b.
func override[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

// AppChange is what a manifest asks of one app: its lifecycle, and what of its web process.
type AppChange struct {
	Name      string
	Lifecycle LifecycleChange
	Web       ProcessChange
}

// ParseManifest reads what a manifest asks of its apps, and the warnings on what cf-hnc ignores
// of it; InvalidManifestError if it cannot be applied.
func ParseManifest(data []byte) ([]AppChange, []string, error) {
	var m manifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, nil, &InvalidManifestError{Why: err.Error()}
	}
	if len(m.Applications) == 0 {
		return nil, nil, &InvalidManifestError{Why: "it has no applications"}
	}
	var all []AppChange
	var warnings []string
	for i, a := range m.Applications {
		if a.Name == "" {
			return nil, nil, &InvalidManifestError{Why: fmt.Sprintf("application %d has no name", i+1)}
		}
		change, err := a.change()
		if err != nil {
			return nil, nil, &InvalidManifestError{Why: fmt.Sprintf("application %q: %s", a.Name, err)}
		}
		all = append(all, change)
		warnings = append(warnings, a.warnings()...)
	}
	return all, warnings, nil
}

// warnings say what cf-hnc does not do of what an application of a manifest asks: no route is
// made, as cf-hnc routes no traffic to apps, and env, services, sidecars and metadata are
// ignored.
func (a manifestApp) warnings() []string {
	var warnings []string
	if a.asksForRoute() {
		warnings = append(warnings, fmt.Sprintf("cf-hnc routes no traffic to apps: application %q gets no route", a.Name))
	}
	var ignored []string
	for key, value := range map[string]json.RawMessage{"env": a.Env, "services": a.Services, "sidecars": a.Sidecars, "metadata": a.Metadata} {
		if isSet(value) {
			ignored = append(ignored, fmt.Sprintf("cf-hnc ignores the %s of application %q", key, a.Name))
		}
	}
	slices.Sort(ignored)
	return append(warnings, ignored...)
}

// change is what an application of a manifest asks of its app.
func (a manifestApp) change() (AppChange, error) {
	if isSet(a.Docker) {
		return AppChange{}, errors.New("cf-hnc stages apps with buildpacks only, and runs no docker images")
	}
	if err := CheckLifecycleType(a.Lifecycle); err != nil {
		return AppChange{}, err
	}
	web, err := merge(ProcessChange{}, a.manifestProcess)
	if err != nil {
		return AppChange{}, err
	}
	for _, p := range a.Processes {
		if p.Type != cfv1alpha1.WebProcessType {
			return AppChange{}, fmt.Errorf("process type %q: cf-hnc runs the web process of an app only", p.Type)
		}
		if web, err = merge(web, p); err != nil {
			return AppChange{}, err
		}
	}
	return AppChange{Name: a.Name, Lifecycle: LifecycleChange{Buildpacks: a.Buildpacks, Stack: a.Stack}, Web: web}, nil
}

// ApplyApp creates or updates one app of a manifest in a space, as the user: the space's app of
// that name, or a new one, gets the manifest's buildpacks and stack, and its web process the
// manifest's instances, sizes, command and health check. cf-hnc makes the web process of a new
// app with Cloud Foundry's defaults; a manifest that sets some of them makes it itself, as
// kubectl cf push does, if cf-hnc has not yet.
func ApplyApp(ctx context.Context, c client.Client, space string, change AppChange) error {
	app, err := AppNamed(ctx, c, space, change.Name)
	if err != nil {
		return err
	}
	if app == nil {
		app = NewApp(space, change.Name, change.Lifecycle)
		if err := c.Create(ctx, app); err != nil {
			return about(AppResource, err)
		}
	} else {
		patch := client.MergeFrom(app.DeepCopy())
		if change.Lifecycle.Apply(&app.Spec.Lifecycle.Data) {
			if err := c.Patch(ctx, app, patch); err != nil {
				return about(AppResource, err)
			}
		}
	}
	if change.Web.Empty() {
		return nil
	}
	_, _, err = ChangeProcess(ctx, c, app, cfv1alpha1.WebProcessType, change.Web)
	return err
}
