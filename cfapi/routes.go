package cfapi

import (
	"net/http"

	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// cf-hnc routes no traffic to apps and rolls out no deployments: the cf CLI's app summary and
// `cf apps` read their lists, and get empty ones.

// listAppRoutes is GET /v3/apps/:guid/routes: none, for an app that the user sees.
func (s *server) listAppRoutes(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.findApp(r, r.PathValue("guid")); err != nil {
		return err
	}
	return s.writeEmptyList(w, r)
}

// listRoutes is GET /v3/routes.
func (s *server) listRoutes(w http.ResponseWriter, r *http.Request) error {
	return s.writeEmptyList(w, r)
}

// listDeployments is GET /v3/deployments.
func (s *server) listDeployments(w http.ResponseWriter, r *http.Request) error {
	return s.writeEmptyList(w, r)
}

// createDeployment is POST /v3/deployments, which cf push and cf restage send for --strategy:
// CF's error that says so, rather than the "API endpoint not found" that the cf CLI would print
// for an endpoint it knows CF to have.
func (s *server) createDeployment(http.ResponseWriter, *http.Request) error {
	return cferror.UnprocessableEntity("cf-hnc rolls out no deployments: push or restage without --strategy; " +
		"cf-hnc replaces a started app's instances one at a time when its droplet changes")
}

// writeEmptyList answers a list that has nothing, for a query that is valid.
func (s *server) writeEmptyList(w http.ResponseWriter, r *http.Request) error {
	q, err := parseList(r, createdOrUpdated...)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForList([]presenter.Resource(nil), 0, q, s.baseURL(r), r.URL.Path))
	return nil
}

// matchResources is POST /v3/resource_matches: cf-hnc keeps no cache of uploaded files, so the
// cf CLI uploads every file.
func (s *server) matchResources(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, struct {
		Resources []struct{} `json:"resources"`
	}{[]struct{}{}})
	return nil
}
