package cfapi

import (
	"net/http"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

const orgDeleteJob = "org.delete"

// listOrgs is GET /v3/organizations: the orgs the user is a member of (all of them for an
// operator), without those being deleted.
func (s *server) listOrgs(w http.ResponseWriter, r *http.Request) error {
	q, err := parseList(r)
	if err != nil {
		return err
	}
	orgs, err := s.dir.Orgs(r.Context(), userOf(r))
	if err != nil {
		return err
	}
	base := s.baseURL(r)
	writeList(s, w, r, q, orgs, func(org *cfv1alpha1.CFOrg) presenter.Org { return presenter.ForOrg(org, base) })
	return nil
}

// getOrg is GET /v3/organizations/:guid.
func (s *server) getOrg(w http.ResponseWriter, r *http.Request) error {
	org, err := s.dir.Org(r.Context(), userOf(r), r.PathValue("guid"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForOrg(org, s.baseURL(r)))
	return nil
}

// createOrgRequest is the body of POST /v3/organizations; the cf CLI always sends suspended.
type createOrgRequest struct {
	Name      string `json:"name"`
	Suspended bool   `json:"suspended"`
}

// createOrg is POST /v3/organizations: an org created as the user (operators may), answered
// once its namespace exists.
func (s *server) createOrg(w http.ResponseWriter, r *http.Request) error {
	var req createOrgRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Name == "" {
		return cferror.UnprocessableEntity("Name can't be blank")
	}
	if req.Suspended {
		return cferror.UnprocessableEntity("cf-hnc does not suspend orgs: create the org with suspended false")
	}
	org, err := cf.CreateOrg(r.Context(), userOf(r).Client, s.cfg.RootNamespace, req.Name, "")
	if err != nil {
		return err
	}
	if err := s.awaitReady(r, w, org); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, presenter.ForOrg(org, s.baseURL(r)))
	return nil
}

// deleteOrg is DELETE /v3/organizations/:guid, as the user (operators may): cf-hnc deletes the
// org's namespace with its spaces, and the job says when that is done.
func (s *server) deleteOrg(w http.ResponseWriter, r *http.Request) error {
	org, err := s.dir.Org(r.Context(), userOf(r), r.PathValue("guid"))
	if err != nil {
		return err
	}
	if err := cf.Delete(r.Context(), userOf(r).Client, org, cf.OrgResource); err != nil {
		return err
	}
	s.acceptJob(w, r, orgDeleteJob, org.Name)
	return nil
}
