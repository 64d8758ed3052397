package cfapi

import (
	"net/http"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

const appDeleteJob = "app.delete"

// findApp returns the app that the request's path names if the user sees it; else CF's "App not
// found", which the cf CLI matches, whether or not it exists.
func (s *server) findApp(r *http.Request, guid string) (*cfv1alpha1.CFApp, error) {
	app := &cfv1alpha1.CFApp{}
	return app, s.dir.Find(r.Context(), userOf(r), guid, app, cf.AppResource)
}

// listApps is GET /v3/apps: the apps of the spaces the user sees (of space_guids, if given),
// without those being deleted.
func (s *server) listApps(w http.ResponseWriter, r *http.Request) error {
	q, err := parseList(r)
	if err != nil {
		return err
	}
	spaces, err := s.dir.SpaceNamespaces(r.Context(), userOf(r), filter(r, "space_guids"))
	if err != nil {
		return err
	}
	base := s.baseURL(r)
	return writeRead(s, w, r, q, func(visit func(*cfv1alpha1.CFApp)) error {
		return cf.AppsIn(r.Context(), userOf(r).Client, spaces, visit)
	}, func(app *cfv1alpha1.CFApp) (presenter.App, bool) { return presenter.ForApp(app, base), true })
}

// getApp is GET /v3/apps/:guid.
func (s *server) getApp(w http.ResponseWriter, r *http.Request) error {
	app, err := s.findApp(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForApp(app, s.baseURL(r)))
	return nil
}

// createAppRequest is the body of POST /v3/apps (cf create-app).
type createAppRequest struct {
	Name          string `json:"name"`
	Relationships struct {
		Space guidData `json:"space"`
	} `json:"relationships"`
	Lifecycle *struct {
		Type string `json:"type"`
		Data struct {
			Buildpacks []string `json:"buildpacks"`
			Stack      string   `json:"stack"`
		} `json:"data"`
	} `json:"lifecycle"`
}

// createApp is POST /v3/apps: a stopped app of the space, created as the user; its name must
// be free in the space.
func (s *server) createApp(w http.ResponseWriter, r *http.Request) error {
	var req createAppRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Name == "" {
		return cferror.UnprocessableEntity("Name can't be blank")
	}
	space, err := s.dir.Space(r.Context(), userOf(r), req.Relationships.Space.Data.GUID)
	if cf.IsNotFound(err) {
		return cferror.UnprocessableEntity(cf.InvalidSpace)
	}
	if err != nil {
		return err
	}
	var lifecycle cf.LifecycleChange
	if l := req.Lifecycle; l != nil {
		if err := cf.CheckLifecycleType(l.Type); err != nil {
			return err
		}
		lifecycle = cf.LifecycleChange{Buildpacks: &l.Data.Buildpacks, Stack: &l.Data.Stack}
	}
	app, err := cf.CreateApp(r.Context(), userOf(r).Client, space.Name, req.Name, lifecycle)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, presenter.ForApp(app, s.baseURL(r)))
	return nil
}

// deleteApp is DELETE /v3/apps/:guid, as the user, in the foreground: the job says when the
// app is gone.
func (s *server) deleteApp(w http.ResponseWriter, r *http.Request) error {
	app, err := s.findApp(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	if err := cf.Delete(r.Context(), userOf(r).Client, app, cf.AppResource); err != nil {
		return err
	}
	s.acceptJob(w, r, appDeleteJob, app.Name)
	return nil
}

// startApp is POST /v3/apps/:guid/actions/start.
func (s *server) startApp(w http.ResponseWriter, r *http.Request) error {
	return s.setState(w, r, cfv1alpha1.StartedState, false)
}

// stopApp is POST /v3/apps/:guid/actions/stop.
func (s *server) stopApp(w http.ResponseWriter, r *http.Request) error {
	return s.setState(w, r, cfv1alpha1.StoppedState, false)
}

// restartApp is POST /v3/apps/:guid/actions/restart: the app's instances anew.
func (s *server) restartApp(w http.ResponseWriter, r *http.Request) error {
	return s.setState(w, r, cfv1alpha1.StartedState, true)
}

// setState sets the app's desired state, as the user (cf.SetState). However late cf-hnc's
// status is, processStats reports the instances made before a start as starting, from what
// this request wrote.
func (s *server) setState(w http.ResponseWriter, r *http.Request, state cfv1alpha1.DesiredState, anew bool) error {
	app, err := s.findApp(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	if err := cf.SetState(r.Context(), userOf(r).Client, app, state, anew); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForApp(app, s.baseURL(r)))
	return nil
}
