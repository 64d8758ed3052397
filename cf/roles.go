package cf

import (
	"cmp"
	"context"
	"crypto/rand"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// A Cloud Foundry role is a subject of a RoleBinding of the role's ClusterRole
// (config/rbac/cf_roles.yaml), in the org's namespace or in the space's. Roles are granted,
// listed and revoked as the user, so that RBAC and cf-hnc's policies decide who may grant what
// (org managers grant the org and space roles, space managers the space roles) and whose roles a
// user sees (org managers and space managers may read the RoleBindings, other members may not).

// roleType is a CF role type as cf-hnc holds it.
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

// InvalidSpace is Cloud Foundry's answer to a role or an app in a space that does not exist or
// that the user does not see.
const InvalidSpace = "Invalid space. Ensure that the space exists and you have access to it."

// Role is a user's CF role in an org (OrgGUID) or a space (SpaceGUID). Kubernetes has no user
// records: a user's GUID is their user name.
type Role struct {
	GUID, Type, User   string
	OrgGUID, SpaceGUID string
	Created            time.Time
}

// typeOf is the CF role type of a RoleBinding in an org's namespace (org) or a space's, or ""
// if it binds no CF role of that place: the copies of the org roles that HNC makes in a space are
// the org's roles, not the space's.
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
	if rest, ok := strings.CutPrefix(username, ServiceAccountPrefix); ok {
		if namespace, name, ok := strings.Cut(rest, ":"); ok && namespace != "" && name != "" && !strings.Contains(name, ":") {
			return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
		}
	}
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: username}
}

// bindingName names a new RoleBinding of a role: the role and a random suffix that nobody can
// guess. HNC copies an org's RoleBindings into its spaces, and refuses a binding in the org
// whose name a space holds already; a space manager, who writes RoleBindings in the space, could
// otherwise take the name of a grant that an org manager makes later, and block it (review 3,
// N14). A grant made twice is found by its role and subject (grantOf), not by its name.
func bindingName(clusterRole string) string {
	return clusterRole + "-" + strings.ToLower(rand.Text()[:16])
}

// grantOf returns, as u reads it, the RoleBinding in namespace that binds a subject to a
// ClusterRole; nil if there is none. Read as u, who is about to write RoleBindings there, so
// that a grant just made is found, as a cache may not find it yet.
func grantOf(ctx context.Context, u User, namespace, clusterRole string, subject rbacv1.Subject) (*rbacv1.RoleBinding, error) {
	bindings := &rbacv1.RoleBindingList{}
	if err := u.Client.List(ctx, bindings, client.InNamespace(namespace)); err != nil {
		return nil, about(RoleResource, err)
	}
	want := subjectKey(subject, namespace)
	for i := range bindings.Items {
		binding := &bindings.Items[i]
		if !isCFRole(binding.RoleRef) || binding.RoleRef.Name != clusterRole {
			continue
		}
		if slices.ContainsFunc(binding.Subjects, func(s rbacv1.Subject) bool { return subjectKey(s, namespace) == want }) {
			return binding, nil
		}
	}
	return nil, nil
}

// CreateRole grants a user (by user name) a role in the org of orgGUID, for an org role, or in
// the space of spaceGUID, for a space role, as u; a nil GUID is a relationship that the request
// leaves out. A role that the user has already (a RoleBinding of the role names them there) is
// Cloud Foundry's "User 'x' already has 'y' role": cf set-space-role and cf set-org-role print
// it as a warning, cf create-space passes over it for the org role.
func (d Directory) CreateRole(ctx context.Context, u User, roleTypeName, username string, orgGUID, spaceGUID *string) (Role, error) {
	t, ok := roleTypes[roleTypeName]
	if !ok {
		known := make([]string, 0, len(roleTypes))
		for name := range roleTypes {
			known = append(known, name)
		}
		slices.Sort(known)
		return Role{}, unprocessable("Type %q is not a role cf-hnc has; it has %s", roleTypeName, strings.Join(known, ", "))
	}
	if username == "" {
		return Role{}, unprocessable("Relationships 'user' must name the user by username or guid")
	}
	namespace, err := d.roleNamespace(ctx, u, t, orgGUID, spaceGUID)
	if err != nil {
		return Role{}, err
	}
	subject := subjectOf(username)
	granted, err := grantOf(ctx, u, namespace, t.clusterRole, subject)
	if err != nil {
		return Role{}, err
	}
	if granted != nil {
		return Role{}, unprocessable("User '%s' already has '%s' role", username, roleTypeName)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: bindingName(t.clusterRole)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: t.clusterRole},
		Subjects:   []rbacv1.Subject{subject},
	}
	if err := u.Client.Create(ctx, binding); err != nil {
		return Role{}, about(RoleResource, err)
	}
	role := Role{GUID: roleGUID(binding), Type: roleTypeName, User: username, Created: binding.CreationTimestamp.Time}
	if t.org {
		role.OrgGUID = namespace
	} else {
		role.SpaceGUID = namespace
	}
	return role, nil
}

// roleNamespace is the namespace of the org or the space of a new role, which the user must
// see.
func (d Directory) roleNamespace(ctx context.Context, u User, t roleType, orgGUID, spaceGUID *string) (string, error) {
	if t.org {
		if orgGUID == nil || spaceGUID != nil {
			return "", unprocessable("An organization role names an organization in its relationships, and no space")
		}
		org, err := d.Org(ctx, u, *orgGUID)
		return namespaceOf(org, err, InvalidOrg)
	}
	if spaceGUID == nil || orgGUID != nil {
		return "", unprocessable("A space role names a space in its relationships, and no organization")
	}
	space, err := d.Space(ctx, u, *spaceGUID)
	return namespaceOf(space, err, InvalidSpace)
}

// namespaceOf is the name of an org or a space that was found, which names its namespace; an
// org or a space that is not found is Cloud Foundry's UnprocessableEntity with detail.
func namespaceOf(obj client.Object, err error, detail string) (string, error) {
	if IsNotFound(err) {
		return "", unprocessable("%s", detail)
	}
	if err != nil {
		return "", err
	}
	return obj.GetName(), nil
}

// roleScope is an org's or a space's namespace, whose roles a list reads.
type roleScope struct {
	namespace string
	org       bool
}

// RoleQuery narrows a list of roles: to the orgs of OrgGUIDs and the spaces of SpaceGUIDs
// (both nil: every org and space the user sees), to role types and users; nil narrows nothing.
type RoleQuery struct {
	OrgGUIDs, SpaceGUIDs, Types, Users []string
}

// Roles lists the roles that u sees, as q narrows them, reading the RoleBindings as u: an org
// or a space whose RoleBindings u may not read is refused when q names it, left out otherwise.
func (d Directory) Roles(ctx context.Context, u User, q RoleQuery) ([]Role, error) {
	scopes, named, err := d.roleScopes(ctx, u, q)
	if err != nil {
		return nil, err
	}
	var roles []Role
	for _, scope := range scopes {
		bindings := &rbacv1.RoleBindingList{}
		if err := u.Client.List(ctx, bindings, client.InNamespace(scope.namespace)); err != nil {
			if apierrors.IsForbidden(err) && !named {
				continue
			}
			return nil, about(RoleResource, err)
		}
		roles = append(roles, rolesIn(bindings.Items, scope, q)...)
	}
	return roles, nil
}

// rolesIn are the roles that the RoleBindings of a scope grant, as q narrows them.
func rolesIn(bindings []rbacv1.RoleBinding, scope roleScope, q RoleQuery) []Role {
	var roles []Role
	for i := range bindings {
		binding := &bindings[i]
		t := typeOf(binding, scope.org)
		if t == "" || (q.Types != nil && !slices.Contains(q.Types, t)) {
			continue
		}
		for _, subject := range binding.Subjects {
			username := Username(subject, binding.Namespace)
			if username == "" || (q.Users != nil && !slices.Contains(q.Users, username)) {
				continue
			}
			role := Role{GUID: roleGUID(binding), Type: t, User: username, Created: binding.CreationTimestamp.Time}
			if scope.org {
				role.OrgGUID = scope.namespace
			} else {
				role.SpaceGUID = scope.namespace
			}
			roles = append(roles, role)
		}
	}
	return roles
}

// roleScopes are the orgs and spaces whose roles a list reads, and whether q named them: those
// of q's orgs and spaces that the user sees, else every org and space the user sees.
func (d Directory) roleScopes(ctx context.Context, u User, q RoleQuery) ([]roleScope, bool, error) {
	var scopes []roleScope
	if q.OrgGUIDs != nil || q.SpaceGUIDs != nil {
		for _, guid := range q.OrgGUIDs {
			if _, err := d.Org(ctx, u, guid); err == nil {
				scopes = append(scopes, roleScope{namespace: guid, org: true})
			} else if !IsNotFound(err) {
				return nil, false, err
			}
		}
		for _, guid := range q.SpaceGUIDs {
			if _, err := d.Space(ctx, u, guid); err == nil {
				scopes = append(scopes, roleScope{namespace: guid})
			} else if !IsNotFound(err) {
				return nil, false, err
			}
		}
		return scopes, true, nil
	}
	visible, err := d.Visible(ctx, u)
	if err != nil {
		return nil, false, err
	}
	orgs := &cfv1alpha1.CFOrgList{}
	if err := d.Reader.List(ctx, orgs, client.InNamespace(d.Root)); err != nil {
		return nil, false, err
	}
	for i := range orgs.Items {
		if visible.Org(&orgs.Items[i]) {
			scopes = append(scopes, roleScope{namespace: orgs.Items[i].Name, org: true})
		}
	}
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := d.Reader.List(ctx, spaces); err != nil {
		return nil, false, err
	}
	for _, space := range treeSpaces(spaces.Items) {
		if visible.Space(&space) {
			scopes = append(scopes, roleScope{namespace: space.Name})
		}
	}
	return scopes, false, nil
}

// DeleteRole revokes the role of guid as u: its RoleBinding, deleted as u, so that RBAC
// decides. A RoleBinding with several subjects (made with kubectl) is deleted whole. A role of an
// org or a space that u does not see is NotFoundError.
func (d Directory) DeleteRole(ctx context.Context, u User, guid string) error {
	namespace, name, _ := strings.Cut(guid, roleSeparator)
	binding := &rbacv1.RoleBinding{}
	if err := d.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, binding); err != nil {
		return about(RoleResource, err)
	}
	var err error
	switch {
	case typeOf(binding, true) != "":
		_, err = d.Org(ctx, u, namespace)
	case typeOf(binding, false) != "":
		_, err = d.Space(ctx, u, namespace)
	default:
		return &NotFoundError{Resource: RoleResource}
	}
	if IsNotFound(err) {
		return &NotFoundError{Resource: RoleResource}
	}
	if err != nil {
		return err
	}
	return about(RoleResource, u.Client.Delete(ctx, binding, client.Preconditions{UID: &binding.UID}))
}

// RoleUsername is the user name of a role request: the cf CLI sends the username, or the GUID,
// which for cf-hnc is the user name.
func RoleUsername(username, guid string) string { return cmp.Or(username, guid) }
