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
	orgResource  = "Organization"
	orgDeleteJob = "org.delete"
)

// listOrgs is GET /v3/organizations: the orgs the user is a member of (all of them for an
// operator), without those being deleted.
func (s *server) listOrgs(w http.ResponseWriter, r *http.Request) error {
	q, err := listing.Parse(r.URL.Query())
	if err != nil {
		return err
	}
	visible, err := membership.Visible(r.Context(), s.cache, sessionOf(r), s.cfg.RootNamespace)
	if err != nil {
		return err
	}
	orgs := &cfv1alpha1.CFOrgList{}
	if err := s.cache.List(r.Context(), orgs, client.InNamespace(s.cfg.RootNamespace)); err != nil {
		return err
	}
	base := s.baseURL(r)
	var presented []presenter.Org
	for i := range orgs.Items {
		if org := &orgs.Items[i]; org.DeletionTimestamp.IsZero() && visible.Org(org) {
			presented = append(presented, presenter.ForOrg(org, base))
		}
	}
	page, total := listing.Apply(presented, q)
	writeJSON(w, http.StatusOK, presenter.ForList(page, total, q, base, r.URL.Path))
	return nil
}

// getOrg is GET /v3/organizations/:guid.
func (s *server) getOrg(w http.ResponseWriter, r *http.Request) error {
	org, err := s.visibleOrg(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForOrg(org, s.baseURL(r)))
	return nil
}

// visibleOrg returns the org of guid if the user sees it; else CF's "Organization not found",
// whether or not it exists.
func (s *server) visibleOrg(r *http.Request, guid string) (*cfv1alpha1.CFOrg, error) {
	org := &cfv1alpha1.CFOrg{}
	if err := s.cache.Get(r.Context(), client.ObjectKey{Namespace: s.cfg.RootNamespace, Name: guid}, org); err != nil {
		return nil, cferror.FromKubernetes(err, orgResource)
	}
	visible, err := membership.Visible(r.Context(), s.cache, sessionOf(r), s.cfg.RootNamespace)
	if err != nil {
		return nil, err
	}
	if !visible.Org(org) {
		return nil, cferror.ResourceNotFound(orgResource)
	}
	return org, nil
}

// createOrgRequest is the body of POST /v3/organizations; the cf CLI always sends suspended.
type createOrgRequest struct {
	Name      string `json:"name"`
	Suspended bool   `json:"suspended"`
}

// createOrg is POST /v3/organizations: a CFOrg in the root namespace named with a new GUID,
// created as the user (operators may), answered once its namespace exists.
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
	org := &cfv1alpha1.CFOrg{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.cfg.RootNamespace, Name: string(uuid.NewUUID())},
		Spec:       cfv1alpha1.CFOrgSpec{DisplayName: req.Name},
	}
	if err := sessionOf(r).Client.Create(r.Context(), org); err != nil {
		return cferror.FromKubernetes(err, orgResource)
	}
	if err := s.awaitReady(r.Context(), w, org); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, presenter.ForOrg(org, s.baseURL(r)))
	return nil
}

// deleteOrg is DELETE /v3/organizations/:guid, as the user (operators may): cf-hnc deletes the
// org's namespace with its spaces, and the job says when that is done.
func (s *server) deleteOrg(w http.ResponseWriter, r *http.Request) error {
	org, err := s.visibleOrg(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	if err := sessionOf(r).Client.Delete(r.Context(), org); err != nil {
		return cferror.FromKubernetes(err, orgResource)
	}
	s.acceptJob(w, r, orgDeleteJob, org.Name)
	return nil
}
