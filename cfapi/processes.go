package cfapi

import (
	"context"
	"net/http"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/auth"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

const processResource = "Process"

// processOrders are the order_by fields of CF's process list.
var processOrders = []string{"created_at", "updated_at"}

// processesIn lists the processes of the spaces as the user, without those being deleted.
func processesIn(ctx context.Context, session *auth.Session, spaces ...string) ([]cfv1alpha1.CFProcess, error) {
	processes, err := listVisible(ctx, session, spaces, func() *cfv1alpha1.CFProcessList { return &cfv1alpha1.CFProcessList{} },
		func(l *cfv1alpha1.CFProcessList) []cfv1alpha1.CFProcess { return l.Items })
	if err != nil {
		return nil, err
	}
	var live []cfv1alpha1.CFProcess
	for _, p := range processes {
		if p.DeletionTimestamp.IsZero() {
			live = append(live, p)
		}
	}
	return live, nil
}

// processesOf lists the processes of an app as the user.
func processesOf(ctx context.Context, session *auth.Session, app *cfv1alpha1.CFApp) ([]cfv1alpha1.CFProcess, error) {
	processes, err := processesIn(ctx, session, app.Namespace)
	if err != nil {
		return nil, err
	}
	var of []cfv1alpha1.CFProcess
	for _, p := range processes {
		if p.Spec.AppRef.Name == app.Name {
			of = append(of, p)
		}
	}
	return of, nil
}

// writeProcesses answers a page of processes.
func (s *server) writeProcesses(w http.ResponseWriter, r *http.Request, q listing.Query, processes []cfv1alpha1.CFProcess) {
	base := s.baseURL(r)
	presented := make([]presenter.Process, len(processes))
	for i := range processes {
		presented[i] = presenter.ForProcess(&processes[i], base)
	}
	page, total := listing.Apply(presented, q)
	writeJSON(w, http.StatusOK, presenter.ForList(page, total, q, base, r.URL.Path))
}

// listAppProcesses is GET /v3/apps/:guid/processes.
func (s *server) listAppProcesses(w http.ResponseWriter, r *http.Request) error {
	q, err := listing.Parse(r.URL.Query(), processOrders...)
	if err != nil {
		return err
	}
	processes, err := s.processesOfApp(r)
	if err != nil {
		return err
	}
	s.writeProcesses(w, r, q, processes)
	return nil
}

// processesOfApp returns the processes of the app that the path's guid names, if the user sees
// it; else CF's "App not found".
func (s *server) processesOfApp(r *http.Request) ([]cfv1alpha1.CFProcess, error) {
	app, err := s.findApp(r.Context(), sessionOf(r), r.PathValue("guid"))
	if err != nil {
		return nil, err
	}
	return processesOf(r.Context(), sessionOf(r), &app.CFApp)
}

// listProcesses is GET /v3/processes: the processes of the spaces the user sees (of
// space_guids, if given), of the apps of app_guids, if given.
func (s *server) listProcesses(w http.ResponseWriter, r *http.Request) error {
	q, err := listing.Parse(r.URL.Query(), processOrders...)
	if err != nil {
		return err
	}
	spaces, err := s.visibleSpaces(r.Context(), sessionOf(r), listing.Values(r.URL.Query(), "space_guids"))
	if err != nil {
		return err
	}
	processes, err := processesIn(r.Context(), sessionOf(r), spaces...)
	if err != nil {
		return err
	}
	if apps := listing.Values(r.URL.Query(), "app_guids"); apps != nil {
		var of []cfv1alpha1.CFProcess
		for _, p := range processes {
			if slices.Contains(apps, p.Spec.AppRef.Name) {
				of = append(of, p)
			}
		}
		processes = of
	}
	s.writeProcesses(w, r, q, processes)
	return nil
}

// findProcess returns the process of guid if the user sees it; else CF's "Process not found",
// which the cf CLI matches.
func (s *server) findProcess(r *http.Request) (*cfv1alpha1.CFProcess, error) {
	p := &cfv1alpha1.CFProcess{}
	found, err := s.getVisible(r.Context(), sessionOf(r), r.PathValue("guid"), p)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, cferror.ResourceNotFound(processResource)
	}
	return p, nil
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

// processStats is GET /v3/processes/:guid/stats: every instance the process asks for, as
// presenter.ForStats says. Whether the process runs, and which droplet, is decided as cf-hnc
// decides it (its app is started and has a droplet), from the app as it is now: the status may
// not have caught up with a start, a stop or a new droplet yet. So a started app lists its
// instances, DOWN until cf-hnc reports them, and the cf CLI, which waits after a start while
// instances are listed and none runs, takes neither an empty list nor an instance made before
// the start for one that runs. A process whose app the user cannot read is presented as its
// status says: running the droplet the status names, if any.
func (s *server) processStats(w http.ResponseWriter, r *http.Request) error {
	p, err := s.findProcess(r)
	if err != nil {
		return err
	}
	app := &cfv1alpha1.CFApp{}
	droplet := p.Status.Droplet
	err = sessionOf(r).Client.Get(r.Context(), client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.AppRef.Name}, app)
	switch {
	case err == nil:
		droplet = ""
		if app.Spec.DesiredState == cfv1alpha1.StartedState {
			droplet = app.Spec.CurrentDropletRef.Name
		}
	case !unreadable(err):
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Resources []presenter.InstanceStats `json:"resources"`
	}{presenter.ForStats(p, droplet)})
	return nil
}

// listSidecars is GET /v3/processes/:guid/sidecars: cf-hnc runs no sidecars.
func (s *server) listSidecars(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.findProcess(r); err != nil {
		return err
	}
	return s.writeEmptyList(w, r)
}
