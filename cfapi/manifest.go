package cfapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/auth"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

// applyManifestJob is the job of an applied manifest: the manifest is applied in its request,
// so its job is complete.
const applyManifestJob = "space.apply_manifest"

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

// lifecycleChange is what a manifest or a request changes of an app's lifecycle; nil changes
// nothing.
type lifecycleChange struct {
	buildpacks *[]string
	stack      *string
}

// defaultBuildpack is what the cf CLI and manifests write for the default buildpacks.
var defaultBuildpack = regexp.MustCompile(`^(default|null)$`)

// apply changes data and says whether anything changed. No buildpacks, or "default" alone,
// detect with the space's default Builder.
func (c lifecycleChange) apply(data *cfv1alpha1.LifecycleData) bool {
	before := *data.DeepCopy()
	if c.buildpacks != nil {
		data.Buildpacks = slices.DeleteFunc(slices.Clone(*c.buildpacks), defaultBuildpack.MatchString)
		if len(data.Buildpacks) == 0 {
			data.Buildpacks = nil
		}
	}
	if c.stack != nil {
		data.Stack = *c.stack
	}
	return before.Stack != data.Stack || !slices.Equal(before.Buildpacks, data.Buildpacks)
}

// checkLifecycleType refuses a lifecycle other than buildpacks (CF's buildpack lifecycle, or
// its newer cnb one, which cf-hnc's buildpack lifecycle is).
func checkLifecycleType(t string) error {
	switch t {
	case "", string(cfv1alpha1.BuildpackLifecycle), "cnb":
		return nil
	}
	return fmt.Errorf("cf-hnc stages apps with buildpacks only: lifecycle %q is not supported", t)
}

// processChange is what a manifest changes of a process; nil changes nothing.
type processChange struct {
	instances        *int32
	memoryMB, diskMB *int64
	command          *string
	healthCheck      *cfv1alpha1.HealthCheckType
	endpoint         *string
	timeout          *int32
}

// merge adds the settings of a manifest process, which win over c's.
func (c processChange) merge(p manifestProcess) (processChange, error) {
	c.instances = override(p.Instances, c.instances)
	if p.Memory != nil {
		c.memoryMB = ptr.To(int64(*p.Memory))
	}
	if p.DiskQuota != nil {
		c.diskMB = ptr.To(int64(*p.DiskQuota))
	}
	c.command = override(p.Command, c.command)
	c.endpoint = override(p.HealthCheckHTTPEndpoint, c.endpoint)
	c.timeout = override(p.Timeout, c.timeout)
	if t := p.HealthCheckType; t != nil {
		switch *t {
		case "none": // CF's old name of process
			c.healthCheck = ptr.To(cfv1alpha1.ProcessHealthCheck)
		case string(cfv1alpha1.PortHealthCheck), string(cfv1alpha1.HTTPHealthCheck), string(cfv1alpha1.ProcessHealthCheck):
			c.healthCheck = ptr.To(cfv1alpha1.HealthCheckType(*t))
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

// apply changes spec and says whether anything changed. An http health check gets "/" when it
// has no endpoint, as CF's; the other types have none.
func (c processChange) apply(spec *cfv1alpha1.CFProcessSpec) bool {
	before := *spec.DeepCopy()
	if c.instances != nil {
		spec.Instances = *c.instances
	}
	if c.memoryMB != nil {
		spec.MemoryMB = *c.memoryMB
	}
	if c.diskMB != nil {
		spec.DiskMB = *c.diskMB
	}
	if c.command != nil {
		spec.Command = *c.command
	}
	if c.healthCheck != nil {
		spec.HealthCheck.Type = *c.healthCheck
	}
	if c.endpoint != nil {
		spec.HealthCheck.Endpoint = *c.endpoint
	}
	if c.timeout != nil {
		spec.HealthCheck.TimeoutSeconds = *c.timeout
	}
	switch {
	case spec.HealthCheck.Type != cfv1alpha1.HTTPHealthCheck:
		spec.HealthCheck.Endpoint = ""
	case spec.HealthCheck.Endpoint == "":
		spec.HealthCheck.Endpoint = "/"
	}
	return before != *spec
}

// appChange is what a manifest asks of one app.
type appChange struct {
	name      string
	lifecycle lifecycleChange
	web       processChange
}

// changes reads what a manifest asks of its apps, and the warnings on what cf-hnc ignores of it.
func changes(data []byte) ([]appChange, []string, error) {
	var m manifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, nil, cferror.InvalidManifest(err.Error())
	}
	if len(m.Applications) == 0 {
		return nil, nil, cferror.InvalidManifest("it has no applications")
	}
	var all []appChange
	var warnings []string
	for i, a := range m.Applications {
		if a.Name == "" {
			return nil, nil, cferror.InvalidManifest(fmt.Sprintf("application %d has no name", i+1))
		}
		change, err := a.change()
		if err != nil {
			return nil, nil, cferror.InvalidManifest(fmt.Sprintf("application %q: %s", a.Name, err))
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
func (a manifestApp) change() (appChange, error) {
	if isSet(a.Docker) {
		return appChange{}, errors.New("cf-hnc stages apps with buildpacks only, and runs no docker images")
	}
	if err := checkLifecycleType(a.Lifecycle); err != nil {
		return appChange{}, err
	}
	web, err := processChange{}.merge(a.manifestProcess)
	if err != nil {
		return appChange{}, err
	}
	for _, p := range a.Processes {
		if p.Type != cfv1alpha1.WebProcessType {
			return appChange{}, fmt.Errorf("process type %q: cf-hnc runs the web process of an app only", p.Type)
		}
		if web, err = web.merge(p); err != nil {
			return appChange{}, err
		}
	}
	return appChange{name: a.Name, lifecycle: lifecycleChange{buildpacks: a.Buildpacks, stack: a.Stack}, web: web}, nil
}

// applyManifest is POST /v3/spaces/:guid/actions/apply_manifest (cf push): per application, the
// space's app of that name, or a new one, gets the manifest's buildpacks and stack, and its web
// process the manifest's instances, sizes, command and health check; as the user, in the
// request. Its job is complete at once. cf-hnc routes nothing: route keys are ignored.
func (s *server) applyManifest(w http.ResponseWriter, r *http.Request) error {
	space, err := s.visibleSpace(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return cferror.MessageParseError()
	}
	apps, warnings, err := changes(data)
	if err != nil {
		return err
	}
	for _, change := range apps {
		if err := applyApp(r.Context(), sessionOf(r), space.Name, change); err != nil {
			return err
		}
	}
	for _, warning := range warnings {
		w.Header().Add("X-Cf-Warnings", url.QueryEscape(warning))
	}
	s.acceptJob(w, r, applyManifestJob, space.Name)
	return nil
}

// applyApp creates or updates one app of a manifest in a space, as the user.
func applyApp(ctx context.Context, session *auth.Session, space string, change appChange) error {
	apps, err := appsIn(ctx, session, space)
	if err != nil {
		return err
	}
	var app *cfv1alpha1.CFApp
	if owner := cfv1alpha1.DisplayNameOwner(apps, change.name); owner != nil {
		app = &owner.CFApp
		patch := client.MergeFrom(app.DeepCopy())
		if change.lifecycle.apply(&app.Spec.Lifecycle.Data) {
			if err := session.Client.Patch(ctx, app, patch); err != nil {
				return cferror.FromKubernetes(err, appResource)
			}
		}
	} else {
		app = newApp(space, change.name, change.lifecycle)
		if err := session.Client.Create(ctx, app); err != nil {
			return cferror.FromKubernetes(err, appResource)
		}
	}
	return applyWebProcess(ctx, session, app, change.web)
}

// applyWebProcess changes the app's web process as a manifest asks. cf-hnc makes the web
// process of a new app with CF's defaults; a manifest that sets some of them makes it itself,
// as kubectl cf push does, if cf-hnc has not yet.
func applyWebProcess(ctx context.Context, session *auth.Session, app *cfv1alpha1.CFApp, change processChange) error {
	if change == (processChange{}) {
		return nil
	}
	key := client.ObjectKey{Namespace: app.Namespace, Name: cfv1alpha1.ProcessName(app.Name, cfv1alpha1.WebProcessType)}
	web := &cfv1alpha1.CFProcess{}
	err := session.Client.Get(ctx, key, web)
	if apierrors.IsNotFound(err) {
		web = cfv1alpha1.NewWebProcess(app)
		change.apply(&web.Spec)
		err = session.Client.Create(ctx, web)
		if !apierrors.IsAlreadyExists(err) {
			return cferror.FromKubernetes(err, processResource)
		}
		err = session.Client.Get(ctx, key, web) // cf-hnc made it meanwhile
	}
	if err != nil {
		return cferror.FromKubernetes(err, processResource)
	}
	patch := client.MergeFrom(web.DeepCopy())
	if change.apply(&web.Spec) {
		return cferror.FromKubernetes(session.Client.Patch(ctx, web, patch), processResource)
	}
	return nil
}


// manifestDiff is POST /v3/spaces/:guid/manifest_diff: cf-hnc does not compute what a manifest
// would change, and answers no difference, as Korifi does; the cf CLI only shows the diff.
func (s *server) manifestDiff(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.visibleSpace(r, r.PathValue("guid")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Diff []struct{} `json:"diff"`
	}{[]struct{}{}})
	return nil
}
