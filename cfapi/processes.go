package cfapi

import (
	"net/http"
	"slices"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// processesOfApp returns the processes of the app that the path's guid names, if the user sees
// it; else CF's "App not found".
func (s *server) processesOfApp(r *http.Request) ([]cfv1alpha1.CFProcess, error) {
	app, err := s.findApp(r, r.PathValue("guid"))
	if err != nil {
		return nil, err
	}
	return cf.ProcessesOf(r.Context(), userOf(r).Client, app)
}

// listAppProcesses is GET /v3/apps/:guid/processes.
func (s *server) listAppProcesses(w http.ResponseWriter, r *http.Request) error {
	q, err := parseList(r, createdOrUpdated...)
	if err != nil {
		return err
	}
	processes, err := s.processesOfApp(r)
	if err != nil {
		return err
	}
	base := s.baseURL(r)
	writeList(s, w, r, q, processes, func(p *cfv1alpha1.CFProcess) presenter.Process { return presenter.ForProcess(p, base) })
	return nil
}

// listProcesses is GET /v3/processes: the processes of the spaces the user sees (of
// space_guids, if given), of the apps of app_guids, if given.
func (s *server) listProcesses(w http.ResponseWriter, r *http.Request) error {
	q, err := parseList(r, createdOrUpdated...)
	if err != nil {
		return err
	}
	spaces, err := s.dir.SpaceNamespaces(r.Context(), userOf(r), filter(r, "space_guids"))
	if err != nil {
		return err
	}
	base, apps := s.baseURL(r), filter(r, "app_guids")
	return writeRead(s, w, r, q, func(visit func(*cfv1alpha1.CFProcess)) error {
		return cf.ProcessesIn(r.Context(), userOf(r).Client, spaces, visit)
	}, func(p *cfv1alpha1.CFProcess) (presenter.Process, bool) {
		if apps != nil && !slices.Contains(apps, p.Spec.AppRef.Name) {
			return presenter.Process{}, false
		}
		return presenter.ForProcess(p, base), true
	})
}

// findProcess returns the process that the path's guid names if the user sees it; else CF's
// "Process not found", which the cf CLI matches.
func (s *server) findProcess(r *http.Request) (*cfv1alpha1.CFProcess, error) {
	p := &cfv1alpha1.CFProcess{}
	return p, s.dir.Find(r.Context(), userOf(r), r.PathValue("guid"), p, cf.ProcessResource)
}

// getProcess is GET /v3/processes/:guid.
func (s *server) getProcess(w http.ResponseWriter, r *http.Request) error {
	p, err := s.findProcess(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForProcess(p, s.baseURL(r)))
	return nil
}

// processStats is GET /v3/processes/:guid/stats: every instance the process asks for
// (cf.Instances), running the droplet that its app, as it is now, says it runs
// (cf.RunningDroplet). So a started app lists its instances, DOWN until cf-hnc reports them, and
// the cf CLI, which waits after a start while instances are listed and none runs, takes neither
// an empty list nor an instance made before the start for one that runs.
func (s *server) processStats(w http.ResponseWriter, r *http.Request) error {
	p, err := s.findProcess(r)
	if err != nil {
		return err
	}
	app, err := cf.AppOfProcess(r.Context(), userOf(r).Client, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Resources []presenter.InstanceStats `json:"resources"`
	}{presenter.ForStats(p, cf.Instances(p, cf.RunningDroplet(p, app)))})
	return nil
}

// listSidecars is GET /v3/processes/:guid/sidecars: cf-hnc runs no sidecars.
func (s *server) listSidecars(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.findProcess(r); err != nil {
		return err
	}
	return s.writeEmptyList(w, r)
}
