package cfapi

import (
	"net/http"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"

	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// createRoleRequest is the body of POST /v3/roles (cli:resources/role_resource.go).
type createRoleRequest struct {
	Type          string `json:"type"`
	Relationships struct {
		Organization *guidData `json:"organization"`
		Space        *guidData `json:"space"`
		User         struct {
			Data struct {
				GUID     string `json:"guid"`
				Username string `json:"username"`
			} `json:"data"`
		} `json:"user"`
	} `json:"relationships"`
}

// guidOf is the GUID of a relationship that the request may leave out: nil if it does.
func guidOf(rel *guidData) *string {
	if rel == nil {
		return nil
	}
	return &rel.Data.GUID
}

// createRole is POST /v3/roles: the user of the request, as the requesting user, in the org's
// namespace for an org role, in the space's for a space role (cf.Directory.CreateRole).
func (s *server) createRole(w http.ResponseWriter, r *http.Request) error {
	var req createRoleRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	rel := req.Relationships
	role, err := s.dir.CreateRole(r.Context(), userOf(r), req.Type, cf.RoleUsername(rel.User.Data.Username, rel.User.Data.GUID),
		guidOf(rel.Organization), guidOf(rel.Space))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, presenter.ForRole(role, s.baseURL(r)))
	return nil
}

// listRoles is GET /v3/roles: the roles in the orgs of organization_guids and the spaces of
// space_guids (`cf org-users`, `cf space-users`), or else in every org and space the user sees,
// filtered by types and user_guids, read as the user (cf.Directory.Roles); include=user adds
// their users.
func (s *server) listRoles(w http.ResponseWriter, r *http.Request) error {
	q, err := parseList(r, createdOrUpdated...)
	if err != nil {
		return err
	}
	roles, err := s.dir.Roles(r.Context(), userOf(r), cf.RoleQuery{
		OrgGUIDs: filter(r, "organization_guids"), SpaceGUIDs: filter(r, "space_guids"),
		Types: filter(r, "types"), Users: filter(r, "user_guids"),
	})
	if err != nil {
		return err
	}
	base := s.baseURL(r)
	presented := make([]presenter.Role, len(roles))
	for i := range roles {
		presented[i] = presenter.ForRole(roles[i], base)
	}
	page, total := listingApply(presented, q)
	list := presenter.ForList(page, total, q, base, r.URL.Path)
	if slices.Contains(filter(r, "include"), "user") {
		list.Included = &presenter.Included{Users: usersOf(page)}
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

// usersOf are the users of a page of roles, each once.
func usersOf(roles []presenter.Role) []presenter.User {
	users := []presenter.User{}
	seen := sets.New[string]()
	for _, role := range roles {
		if name := role.Relationships["user"].Data.GUID; !seen.Has(name) {
			seen.Insert(name)
			users = append(users, presenter.ForUser(name))
		}
	}
	return users
}

// deleteRole is DELETE /v3/roles/:guid: the role's RoleBinding, deleted as the user. The
// deletion is done when the answer comes: it names no job, and the cf CLI then does not poll.
func (s *server) deleteRole(w http.ResponseWriter, r *http.Request) error {
	if err := s.dir.DeleteRole(r.Context(), userOf(r), r.PathValue("guid")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}
