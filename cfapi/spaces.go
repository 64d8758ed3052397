package cfapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

const spaceDeleteJob = "space.delete"

// listSpaces is GET /v3/spaces: the spaces the user is a member of, or of whose org (all of
// them for an operator), without those being deleted; organization_guids narrows them to orgs.
func (s *server) listSpaces(w http.ResponseWriter, r *http.Request) error {
	q, err := parseList(r)
	if err != nil {
		return err
	}
	spaces, err := s.dir.Spaces(r.Context(), userOf(r), filter(r, "organization_guids"))
	if err != nil {
		return err
	}
	base := s.baseURL(r)
	writeList(s, w, r, q, spaces, func(space *cfv1alpha1.CFSpace) presenter.Space { return presenter.ForSpace(space, base) })
	return nil
}

// getSpace is GET /v3/spaces/:guid.
func (s *server) getSpace(w http.ResponseWriter, r *http.Request) error {
	space, err := s.dir.Space(r.Context(), userOf(r), r.PathValue("guid"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForSpace(space, s.baseURL(r)))
	return nil
}

// createSpaceRequest is the body of POST /v3/spaces.
type createSpaceRequest struct {
	Name          string `json:"name"`
	Relationships struct {
		Organization guidData `json:"organization"`
	} `json:"relationships"`
}

// guidData is a to-one relationship of a request body.
type guidData struct {
	Data struct {
		GUID string `json:"guid"`
	} `json:"data"`
}

// createSpace is POST /v3/spaces: a space of the org, created as the user (org managers and
// operators may), answered once its namespace exists: the cf CLI's next requests (the
// creator's roles) go into it.
func (s *server) createSpace(w http.ResponseWriter, r *http.Request) error {
	var req createSpaceRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Name == "" {
		return cferror.UnprocessableEntity("Name can't be blank")
	}
	guid := req.Relationships.Organization.Data.GUID
	if guid == "" {
		return cferror.UnprocessableEntity("Relationships 'organization' must name the space's org by its GUID")
	}
	org, err := s.dir.Org(r.Context(), userOf(r), guid)
	if cf.IsNotFound(err) {
		return cferror.UnprocessableEntity(cf.InvalidOrg)
	}
	if err != nil {
		return err
	}
	space, err := cf.CreateSpace(r.Context(), userOf(r).Client, org, req.Name, "")
	if err != nil {
		return err
	}
	if err := s.awaitReady(r, w, space); err != nil {
		return err
	}
	if err := s.awaitRoleManagement(r, w, space); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, presenter.ForSpace(space, s.baseURL(r)))
	return nil
}

// deleteSpace is DELETE /v3/spaces/:guid, as the user (org managers and operators may): cf-hnc
// deletes the space's namespace, and the job says when that is done.
func (s *server) deleteSpace(w http.ResponseWriter, r *http.Request) error {
	space, err := s.dir.Space(r.Context(), userOf(r), r.PathValue("guid"))
	if err != nil {
		return err
	}
	if err := cf.Delete(r.Context(), userOf(r).Client, space, cf.SpaceResource); err != nil {
		return err
	}
	s.acceptJob(w, r, spaceDeleteJob, space.Name)
	return nil
}

// awaitRoleManagement waits until the creator of a space may grant its roles (cf.
// AwaitRoleManagement), which the cf CLI does next; past ReadyTimeout the answer goes on with a
// warning.
func (s *server) awaitRoleManagement(r *http.Request, w http.ResponseWriter, space *cfv1alpha1.CFSpace) error {
	err := cf.AwaitRoleManagement(r.Context(), userOf(r).Client, space.Name, cf.Wait{Interval: readyPoll, Timeout: s.cfg.ReadyTimeout})
	var notReady *cf.NotReadyError
	if errors.As(err, &notReady) {
		warn(w, fmt.Sprintf("%q (%s): the org's roles have not reached the space after %s; granting its roles works once they have",
			space.GetDisplayName(), space.Name, s.cfg.ReadyTimeout))
		return nil
	}
	return err
}

// readyPoll is how often a new org or space is looked at in the cache while it becomes ready.
const readyPoll = 100 * time.Millisecond

// awaitReady waits until obj, just created, is Ready in the API's cache. A reason that only an
// operator can end fails at once with CF's UnprocessableEntity and the condition's message. Past
// ReadyTimeout, the answer goes on with a warning, which the cf CLI prints: the object exists,
// and becomes ready later.
func (s *server) awaitReady(r *http.Request, w http.ResponseWriter, obj cf.Conditioned) error {
	err := cf.AwaitReady(r.Context(), s.dir.Reader, obj, cf.Wait{Interval: readyPoll, Timeout: s.cfg.ReadyTimeout})
	var needsOperator *cf.NeedsOperatorError
	var notReady *cf.NotReadyError
	switch {
	case errors.As(err, &needsOperator):
		return cferror.UnprocessableEntity(needsOperator.Ready.Message)
	case errors.As(err, &notReady):
		why := "cf-hnc has not made its namespace yet"
		if notReady.Ready != nil {
			why = notReady.Ready.Reason + ": " + notReady.Ready.Message
		}
		warn(w, fmt.Sprintf("%q (%s) is not ready after %s (%s); it becomes usable once it is",
			obj.GetDisplayName(), obj.GetName(), s.cfg.ReadyTimeout, why))
		return nil
	}
	return err
}
