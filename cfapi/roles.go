package cfapi

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/auth"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
	"code.cloudfoundry.org/cf-hnc/cfapi/membership"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

const roleResource = "Role"

// roleType is a CF role type as cf-hnc holds it: a RoleBinding of a CF ClusterRole
// (config/rbac/cf_roles.yaml) in the org's namespace or in the space's.
type roleType struct {
	clusterRole string
	org         bool
}

// roleTypes are the CF role types that cf-hnc has. CF's organization_auditor,
// organization_billing_manager and space_supporter have no ClusterRole.
var roleTypes = map[string]roleType{
	"organization_user":    {clusterRole: "cf-org-user", org: true},
	"organization_manager": {clusterRole: "cf-org-manager", org: true},
	"space_developer":      {clusterRole: "cf-space-developer"},
	"space_manager":        {clusterRole: "cf-space-manager"},
	"space_auditor":        {clusterRole: "cf-space-auditor"},
}

// typeOf is the CF role type of a RoleBinding in an org's namespace (org) or a space's, or
// "" if it binds no CF role of that place: the copies of the org roles that HNC makes in a
// space are the org's roles, not the space's.
func typeOf(binding *rbacv1.RoleBinding, org bool) string {
	if binding.RoleRef.APIGroup != rbacv1.GroupName || binding.RoleRef.Kind != "ClusterRole" {
		return ""
	}
	for name, t := range roleTypes {
		if t.clusterRole == binding.RoleRef.Name && t.org == org {
			return name
		}
	}
	return ""
}

// roleSeparator joins a RoleBinding's namespace and name into the GUID of its roles.
const roleSeparator = "~"

func roleGUID(binding *rbacv1.RoleBinding) string {
	return binding.Namespace + roleSeparator + binding.Name
}

// subjectOf is the RoleBinding subject of a Kubernetes user name, which the cf CLI sends as a
// role's username (for the creator, the name /whoami reported): a ServiceAccount for
// system:serviceaccount:<namespace>:<name>, else a User.
func subjectOf(username string) rbacv1.Subject {
	if rest, ok := strings.CutPrefix(username, auth.ServiceAccountPrefix); ok {
		if namespace, name, ok := strings.Cut(rest, ":"); ok && namespace != "" && name != "" && !strings.Contains(name, ":") {
			return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
		}
	}
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: username}
}

// bindingName names the RoleBinding of a role and a subject the same each time, so that
// granting a role twice finds the first grant.
func bindingName(clusterRole string, subject rbacv1.Subject) string {
	sum := sha256.Sum256([]byte(subject.Kind + "\x00" + subject.Namespace + "\x00" + subject.Name))
	return clusterRole + "-" + hex.EncodeToString(sum[:])[:16]
}

// guidData is a to-one relationship of a request body.
type guidData struct {
	Data struct {
		GUID string `json:"guid"`
	} `json:"data"`
}

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

// invalidSpace is CF's answer to a role in a space that does not exist or that the user does
// not see.
const invalidSpace = "Invalid space. Ensure that the space exists and you have access to it."

// createRole is POST /v3/roles: a RoleBinding of the role's ClusterRole to the user, in the
// org's namespace for an org role, in the space's for a space role, created as the requesting
// user, so that RBAC and cf-hnc's policies decide who may grant what (org managers grant the
// org and space roles, space managers the space roles). A role that the user has already (its
// RoleBinding exists) is CF's "User 'x' already has 'y' role": cf set-space-role and cf
// set-org-role print it as a warning, cf create-space passes over it for the org role.
func (s *server) createRole(w http.ResponseWriter, r *http.Request) error {
	var req createRoleRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	t, ok := roleTypes[req.Type]
	if !ok {
		known := make([]string, 0, len(roleTypes))
		for name := range roleTypes {
			known = append(known, name)
		}
		slices.Sort(known)
		return cferror.UnprocessableEntity(fmt.Sprintf("Type %q is not a role cf-hnc has; it has %s", req.Type, strings.Join(known, ", ")))
	}
	username := cmp.Or(req.Relationships.User.Data.Username, req.Relationships.User.Data.GUID)
	if username == "" {
		return cferror.UnprocessableEntity("Relationships 'user' must name the user by username or guid")
	}
	var orgGUID, spaceGUID, namespace string
	if t.org {
		if req.Relationships.Organization == nil || req.Relationships.Space != nil {
			return cferror.UnprocessableEntity("An organization role names an organization in its relationships, and no space")
		}
		org, err := s.visibleOrg(r, req.Relationships.Organization.Data.GUID)
		if err := notFoundAs(err, invalidOrg); err != nil {
			return err
		}
		orgGUID, namespace = org.Name, org.Name
	} else {
		if req.Relationships.Space == nil || req.Relationships.Organization != nil {
			return cferror.UnprocessableEntity("A space role names a space in its relationships, and no organization")
		}
		space, err := s.visibleSpace(r, req.Relationships.Space.Data.GUID)
		if err := notFoundAs(err, invalidSpace); err != nil {
			return err
		}
		spaceGUID, namespace = space.Name, space.Name
	}
	subject := subjectOf(username)
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: bindingName(t.clusterRole, subject)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: t.clusterRole},
		Subjects:   []rbacv1.Subject{subject},
	}
	if err := sessionOf(r).Client.Create(r.Context(), binding); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return cferror.UnprocessableEntity(fmt.Sprintf("User '%s' already has '%s' role", username, req.Type))
		}
		return cferror.FromKubernetes(err, roleResource)
	}
	writeJSON(w, http.StatusCreated, presenter.ForRole(roleGUID(binding), req.Type, username, orgGUID, spaceGUID, binding.CreationTimestamp.Time, s.baseURL(r)))
	return nil
}

// notFoundAs answers CF's UnprocessableEntity with detail for an org or a space that is not
// found; other errors stay.
func notFoundAs(err error, detail string) error {
	if isNotFound(err) {
		return cferror.UnprocessableEntity(detail)
	}
	return err
}

// isNotFound says whether err is CF's answer for what is not found, or not visible.
func isNotFound(err error) bool {
	var cf *cferror.Error
	return errors.As(err, &cf) && cf.Status == http.StatusNotFound
}

// roleOrders are the order_by fields of CF's role list.
var roleOrders = []string{"created_at", "updated_at"}

// roleScope is an org's or a space's namespace, whose roles a list reads.
type roleScope struct {
	namespace string
	org       bool
}

// listRoles is GET /v3/roles: the roles in the orgs of organization_guids and the spaces of
// space_guids (`cf org-users`, `cf space-users`), or else in every org and space the user sees,
// filtered by types and user_guids; include=user adds their users. The RoleBindings are read
// with the user's credentials: RBAC decides whose roles a user sees (org managers and space
// managers may read the RoleBindings, other members may not), and an org or space whose
// RoleBindings the user may not read is refused when named, left out otherwise.
func (s *server) listRoles(w http.ResponseWriter, r *http.Request) error {
	values := r.URL.Query()
	q, err := listing.Parse(values, roleOrders...)
	if err != nil {
		return err
	}
	scopes, named, err := s.roleScopes(r)
	if err != nil {
		return err
	}
	types, users := listing.Values(values, "types"), listing.Values(values, "user_guids")
	base := s.baseURL(r)
	var roles []presenter.Role
	for _, scope := range scopes {
		bindings := &rbacv1.RoleBindingList{}
		if err := sessionOf(r).Client.List(r.Context(), bindings, client.InNamespace(scope.namespace)); err != nil {
			if apierrors.IsForbidden(err) && !named {
				continue
			}
			return cferror.FromKubernetes(err, roleResource)
		}
		for i := range bindings.Items {
			binding := &bindings.Items[i]
			roleType := typeOf(binding, scope.org)
			if roleType == "" || (types != nil && !slices.Contains(types, roleType)) {
				continue
			}
			for _, subject := range binding.Subjects {
				username := membership.Username(subject, binding.Namespace)
				if username == "" || (users != nil && !slices.Contains(users, username)) {
					continue
				}
				orgGUID, spaceGUID := scope.namespace, ""
				if !scope.org {
					orgGUID, spaceGUID = "", scope.namespace
				}
				roles = append(roles, presenter.ForRole(roleGUID(binding), roleType, username, orgGUID, spaceGUID, binding.CreationTimestamp.Time, base))
			}
		}
	}
	page, total := listing.Apply(roles, q)
	list := presenter.ForList(page, total, q, base, r.URL.Path)
	if slices.Contains(listing.Values(values, "include"), "user") {
		list.Included = &presenter.Included{Users: []presenter.User{}}
		seen := sets.New[string]()
		for _, role := range page {
			if name := role.Relationships["user"].Data.GUID; !seen.Has(name) {
				seen.Insert(name)
				list.Included.Users = append(list.Included.Users, presenter.ForUser(name))
			}
		}
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

// roleScopes are the orgs and spaces whose roles a list reads, and whether the request named
// them: those of organization_guids and space_guids that the user sees, else every org and
// space the user sees.
func (s *server) roleScopes(r *http.Request) ([]roleScope, bool, error) {
	values := r.URL.Query()
	orgs, spaces := listing.Values(values, "organization_guids"), listing.Values(values, "space_guids")
	var scopes []roleScope
	if orgs != nil || spaces != nil {
		for _, guid := range orgs {
			if _, err := s.visibleOrg(r, guid); err == nil {
				scopes = append(scopes, roleScope{namespace: guid, org: true})
			} else if !isNotFound(err) {
				return nil, false, err
			}
		}
		for _, guid := range spaces {
			if _, err := s.visibleSpace(r, guid); err == nil {
				scopes = append(scopes, roleScope{namespace: guid})
			} else if !isNotFound(err) {
				return nil, false, err
			}
		}
		return scopes, true, nil
	}
	visible, err := membership.Visible(r.Context(), s.cache, sessionOf(r), s.cfg.RootNamespace)
	if err != nil {
		return nil, false, err
	}
	orgList := &cfv1alpha1.CFOrgList{}
	if err := s.cache.List(r.Context(), orgList, client.InNamespace(s.cfg.RootNamespace)); err != nil {
		return nil, false, err
	}
	for i := range orgList.Items {
		if visible.Org(&orgList.Items[i]) {
			scopes = append(scopes, roleScope{namespace: orgList.Items[i].Name, org: true})
		}
	}
	spaceList := &cfv1alpha1.CFSpaceList{}
	if err := s.cache.List(r.Context(), spaceList); err != nil {
		return nil, false, err
	}
	for i := range spaceList.Items {
		if visible.Space(&spaceList.Items[i]) {
			scopes = append(scopes, roleScope{namespace: spaceList.Items[i].Name})
		}
	}
	return scopes, false, nil
}

// deleteRole is DELETE /v3/roles/:guid: the RoleBinding of the role, deleted as the user, so
// that RBAC decides. A RoleBinding with several subjects (made with kubectl) is deleted whole.
// The deletion is done when the answer comes: it names no job, and the cf CLI then does not poll.
func (s *server) deleteRole(w http.ResponseWriter, r *http.Request) error {
	namespace, name, _ := strings.Cut(r.PathValue("guid"), roleSeparator)
	binding := &rbacv1.RoleBinding{}
	if err := s.cache.Get(r.Context(), client.ObjectKey{Namespace: namespace, Name: name}, binding); err != nil {
		return cferror.FromKubernetes(err, roleResource)
	}
	var err error
	switch {
	case typeOf(binding, true) != "":
		_, err = s.visibleOrg(r, namespace)
	case typeOf(binding, false) != "":
		_, err = s.visibleSpace(r, namespace)
	default:
		return cferror.ResourceNotFound(roleResource)
	}
	if isNotFound(err) {
		return cferror.ResourceNotFound(roleResource)
	}
	if err != nil {
		return err
	}
	if err := sessionOf(r).Client.Delete(r.Context(), binding, client.Preconditions{UID: &binding.UID}); err != nil {
		return cferror.FromKubernetes(err, roleResource)
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}
