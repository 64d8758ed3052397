package cfapi

import (
	"context"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/auth"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

const (
	appResource  = "App"
	appDeleteJob = "app.delete"
)

// appRoutes are the endpoints of apps, their processes and what the cf CLI's app summary reads.
func (s *server) appRoutes() map[string]handlerFunc {
	return map[string]handlerFunc{
		"POST /v3/spaces/{guid}/actions/apply_manifest":       s.applyManifest,
		"POST /v3/spaces/{guid}/manifest_diff":                s.manifestDiff,
		"GET /v3/apps":                                        s.listApps,
		"POST /v3/apps":                                       s.createApp,
		"GET /v3/apps/{guid}":                                 s.getApp,
		"DELETE /v3/apps/{guid}":                              s.deleteApp,
		"POST /v3/apps/{guid}/actions/start":                  s.startApp,
		"POST /v3/apps/{guid}/actions/stop":                   s.stopApp,
		"POST /v3/apps/{guid}/actions/restart":                s.restartApp,
		"GET /v3/apps/{guid}/relationships/current_droplet":   s.getCurrentDroplet,
		"PATCH /v3/apps/{guid}/relationships/current_droplet": s.setCurrentDroplet,
		"GET /v3/apps/{guid}/processes":                       s.listAppProcesses,
		"POST /v3/apps/{guid}/processes/{type}/actions/scale": s.scaleAppProcess,
		"GET /v3/processes":                                   s.listProcesses,
		"GET /v3/processes/{guid}":                            s.getProcess,
		"GET /v3/processes/{guid}/stats":                      s.processStats,
		"GET /v3/processes/{guid}/sidecars":                   s.listSidecars,
		"POST /v3/processes/{guid}/actions/scale":             s.scaleProcess,
		"GET /v3/apps/{guid}/routes":                          s.listAppRoutes,
		"GET /v3/routes":                                      s.listRoutes,
		"GET /v3/deployments":                                 s.listDeployments,
		"POST /v3/deployments":                                s.createDeployment,
		"POST /v3/resource_matches":                           s.matchResources,
	}
}

// namedApp gives a CFApp the display-name accessor of the ownership rule of names, and makes it
// an object whose deletion a job follows.
type namedApp struct{ cfv1alpha1.CFApp }

// GetDisplayName returns the app's name.
func (a *namedApp) GetDisplayName() string { return a.Spec.DisplayName }

// findApp returns the app of guid if the user sees it; else CF's "App not found", which the
// cf CLI matches, whether or not it exists.
func (s *server) findApp(ctx context.Context, session *auth.Session, guid string) (*namedApp, error) {
	app := &namedApp{}
	found, err := s.getVisible(ctx, session, guid, &app.CFApp)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, cferror.ResourceNotFound(appResource)
	}
	return app, nil
}

// appsIn lists the apps of the spaces as the user.
func appsIn(ctx context.Context, session *auth.Session, spaces ...string) ([]namedApp, error) {
	return listVisible(ctx, session, spaces, func() *cfv1alpha1.CFAppList { return &cfv1alpha1.CFAppList{} },
		func(l *cfv1alpha1.CFAppList) []namedApp {
			named := make([]namedApp, len(l.Items))
			for i := range l.Items {
				named[i] = namedApp{l.Items[i]}
			}
			return named
		})
}

// listApps is GET /v3/apps: the apps of the spaces the user sees (of space_guids, if given),
// without those being deleted.
func (s *server) listApps(w http.ResponseWriter, r *http.Request) error {
	q, err := listing.Parse(r.URL.Query())
	if err != nil {
		return err
	}
	spaces, err := s.visibleSpaces(r.Context(), sessionOf(r), listing.Values(r.URL.Query(), "space_guids"))
	if err != nil {
		return err
	}
	apps, err := appsIn(r.Context(), sessionOf(r), spaces...)
	if err != nil {
		return err
	}
	base := s.baseURL(r)
	var presented []presenter.App
	for i := range apps {
		if app := &apps[i].CFApp; app.DeletionTimestamp.IsZero() {
			presented = append(presented, presenter.ForApp(app, base))
		}
	}
	page, total := listing.Apply(presented, q)
	writeJSON(w, http.StatusOK, presenter.ForList(page, total, q, base, r.URL.Path))
	return nil
}

// getApp is GET /v3/apps/:guid.
func (s *server) getApp(w http.ResponseWriter, r *http.Request) error {
	app, err := s.findApp(r.Context(), sessionOf(r), r.PathValue("guid"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForApp(&app.CFApp, s.baseURL(r)))
	return nil
}

// createAppRequest is the body of POST /v3/apps (cf create-app).
type createAppRequest struct {
	Name          string `json:"name"`
	Relationships struct {
		Space struct {
			Data struct {
				GUID string `json:"guid"`
			} `json:"data"`
		} `json:"space"`
	} `json:"relationships"`
	Lifecycle *struct {
		Type string `json:"type"`
		Data struct {
			Buildpacks []string `json:"buildpacks"`
			Stack      string   `json:"stack"`
		} `json:"data"`
	} `json:"lifecycle"`
}

// createApp is POST /v3/apps: a stopped CFApp named with a new GUID in the space's namespace,
// created as the user. Its name must be free in the space, as CF's app names are.
func (s *server) createApp(w http.ResponseWriter, r *http.Request) error {
	var req createAppRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Name == "" {
		return cferror.UnprocessableEntity("Name can't be blank")
	}
	space, err := s.visibleSpace(r, req.Relationships.Space.Data.GUID)
	if err := notFoundAs(err, invalidSpace); err != nil {
		return err
	}
	var lifecycle lifecycleChange
	if l := req.Lifecycle; l != nil {
		if err := checkLifecycleType(l.Type); err != nil {
			return cferror.UnprocessableEntity(err.Error())
		}
		lifecycle = lifecycleChange{buildpacks: &l.Data.Buildpacks, stack: &l.Data.Stack}
	}
	apps, err := appsIn(r.Context(), sessionOf(r), space.Name)
	if err != nil {
		return err
	}
	if cfv1alpha1.DisplayNameOwner(apps, req.Name) != nil {
		return cferror.AppNameTaken(req.Name)
	}
	app := newApp(space.Name, req.Name, lifecycle)
	if err := sessionOf(r).Client.Create(r.Context(), app); err != nil {
		return cferror.FromKubernetes(err, appResource)
	}
	writeJSON(w, http.StatusCreated, presenter.ForApp(app, s.baseURL(r)))
	return nil
}

// newApp is a new app of a space, stopped until it has a droplet, as CF creates apps.
func newApp(space, name string, lifecycle lifecycleChange) *cfv1alpha1.CFApp {
	app := &cfv1alpha1.CFApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: space, Name: string(uuid.NewUUID())},
		Spec: cfv1alpha1.CFAppSpec{
			DisplayName:  name,
			DesiredState: cfv1alpha1.StoppedState,
			Lifecycle:    cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle},
		},
	}
	lifecycle.apply(&app.Spec.Lifecycle.Data)
	return app
}

// deleteApp is DELETE /v3/apps/:guid, as the user, in the foreground: the garbage collector
// deletes the app's processes, builds and packages, and the app once those that block its
// deletion are gone (the web process cf-hnc made); the job says when the app is gone.
func (s *server) deleteApp(w http.ResponseWriter, r *http.Request) error {
	app, err := s.findApp(r.Context(), sessionOf(r), r.PathValue("guid"))
	if err != nil {
		return err
	}
	if err := sessionOf(r).Client.Delete(r.Context(), &app.CFApp, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		return cferror.FromKubernetes(err, appResource)
	}
	s.acceptJob(w, r, appDeleteJob, app.Name)
	return nil
}

// deletingApp reads, as the user who polls the job, the app that an app.delete job deletes;
// nil once it is gone. The user's rights stay while an app goes: they are the space's.
func (s *server) deletingApp(ctx context.Context, session *auth.Session, guid string) (conditioned, string, error) {
	app, err := s.findApp(ctx, session, guid)
	if isNotFound(err) {
		return nil, appResource, nil
	}
	if err != nil {
		return nil, appResource, err
	}
	return app, appResource, nil
}
