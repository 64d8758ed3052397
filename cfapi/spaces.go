package cfapi

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
	"code.cloudfoundry.org/cf-hnc/cfapi/membership"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

const (
	spaceResource  = "Space"
	spaceDeleteJob = "space.delete"
)

// listSpaces is GET /v3/spaces: the spaces the user is a member of, or of whose org (all of
// them for an operator), without those being deleted; organization_guids narrows them to orgs.
func (s *server) listSpaces(w http.ResponseWriter, r *http.Request) error {
	q, err := listing.Parse(r.URL.Query())
	if err != nil {
		return err
	}
	visible, err := membership.Visible(r.Context(), s.cache, sessionOf(r), s.cfg.RootNamespace)
	if err != nil {
		return err
	}
	var spaces []cfv1alpha1.CFSpace
	orgs := listing.Values(r.URL.Query(), "organization_guids")
	if orgs == nil {
		orgs = []string{""} // every namespace
	}
	for _, org := range orgs {
		list := &cfv1alpha1.CFSpaceList{}
		if err := s.cache.List(r.Context(), list, client.InNamespace(org)); err != nil {
			return err
		}
		spaces = append(spaces, list.Items...)
	}
	base := s.baseURL(r)
	var presented []presenter.Space
	for i := range spaces {
		if space := &spaces[i]; space.DeletionTimestamp.IsZero() && visible.Space(space) {
			presented = append(presented, presenter.ForSpace(space, base))
		}
	}
	page, total := listing.Apply(presented, q)
	writeJSON(w, http.StatusOK, presenter.ForList(page, total, q, base, r.URL.Path))
	return nil
}

// getSpace is GET /v3/spaces/:guid.
func (s *server) getSpace(w http.ResponseWriter, r *http.Request) error {
	space, err := s.visibleSpace(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForSpace(space, s.baseURL(r)))
	return nil
}

// visibleSpace returns the space of guid if the user sees it; else CF's "Space not found",
// whether or not it exists.
func (s *server) visibleSpace(r *http.Request, guid string) (*cfv1alpha1.CFSpace, error) {
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := s.cache.List(r.Context(), spaces, client.MatchingFields{membership.NameField: guid}); err != nil {
		return nil, err
	}
	if len(spaces.Items) == 0 {
		return nil, cferror.ResourceNotFound(spaceResource)
	}
	space := &spaces.Items[0]
	visible, err := membership.Visible(r.Context(), s.cache, sessionOf(r), s.cfg.RootNamespace)
	if err != nil {
		return nil, err
	}
	if !visible.Space(space) {
		return nil, cferror.ResourceNotFound(spaceResource)
	}
	return space, nil
}

// createSpaceRequest is the body of POST /v3/spaces.
type createSpaceRequest struct {
	Name          string `json:"name"`
	Relationships struct {
		Organization struct {
			Data struct {
				GUID string `json:"guid"`
			} `json:"data"`
		} `json:"organization"`
	} `json:"relationships"`
}

// invalidOrg is CF's answer to a space in an org that does not exist or that the user does
// not see.
const invalidOrg = "Invalid organization. Ensure the organization exists and you have access to it."

// createSpace is POST /v3/spaces: a CFSpace named with a new GUID in the org's namespace,
// created as the user (org managers and operators may), answered once its namespace exists:
// the cf CLI's next requests (the creator's roles) go into it.
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
	org, err := s.visibleOrg(r, guid)
	if err := notFoundAs(err, invalidOrg); err != nil {
		return err
	}
	if !org.DeletionTimestamp.IsZero() {
		return cferror.UnprocessableEntity(invalidOrg)
	}
	space := &cfv1alpha1.CFSpace{
		ObjectMeta: metav1.ObjectMeta{Namespace: org.Name, Name: string(uuid.NewUUID())},
		Spec:       cfv1alpha1.CFSpaceSpec{DisplayName: req.Name},
	}
	if err := sessionOf(r).Client.Create(r.Context(), space); err != nil {
		return cferror.FromKubernetes(err, spaceResource)
	}
	if err := s.awaitReady(r.Context(), w, space); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, presenter.ForSpace(space, s.baseURL(r)))
	return nil
}

// deleteSpace is DELETE /v3/spaces/:guid, as the user (org managers and operators may): cf-hnc
// deletes the space's namespace, and the job says when that is done.
func (s *server) deleteSpace(w http.ResponseWriter, r *http.Request) error {
	space, err := s.visibleSpace(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	if err := sessionOf(r).Client.Delete(r.Context(), space); err != nil {
		return cferror.FromKubernetes(err, spaceResource)
	}
	s.acceptJob(w, r, spaceDeleteJob, space.Name)
	return nil
}
