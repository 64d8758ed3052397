// Package membership says which orgs and spaces a user is a member of, for the lists of the
// Cloud Foundry API: Kubernetes' RBAC cannot filter a list, so the API reads the RoleBindings
// of the CF roles with its own read-only rights and matches their subjects against the user
// and the user's groups, as the kube-apiserver reports them. Unlike Korifi's, a binding to a
// group the user is in counts.
package membership

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/auth"
)

// Roles are the ClusterRoles of config/rbac/cf_roles.yaml that make their subjects members of
// the namespace they are bound in: an org role in an org's namespace (HNC copies it into every
// space of the org), a space role in a space's.
var Roles = []string{"cf-org-manager", "cf-org-user", "cf-space-manager", "cf-space-developer", "cf-space-auditor"}

// subjectIndex indexes the RoleBindings of the CF roles by their subjects (subjectKey).
const subjectIndex = "cfapi.subject"

// IndexRoleBindings registers the index that Namespaces reads, on a cache of RoleBindings.
func IndexRoleBindings(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &rbacv1.RoleBinding{}, subjectIndex, func(obj client.Object) []string {
		binding := obj.(*rbacv1.RoleBinding)
		if !isCFRole(binding.RoleRef) {
			return nil
		}
		keys := make([]string, 0, len(binding.Subjects))
		for _, s := range binding.Subjects {
			keys = append(keys, subjectKey(s, binding.Namespace))
		}
		return keys
	})
}

// TrimRoleBinding is the cache transform of RoleBindings: of a binding to a CF role it keeps
// the role and the subjects; of any other, only its name. The API caches every RoleBinding of
// the cluster, and needs only those.
func TrimRoleBinding(obj any) (any, error) {
	binding, ok := obj.(*rbacv1.RoleBinding)
	if !ok {
		return obj, nil
	}
	trimmed := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{
		Namespace: binding.Namespace, Name: binding.Name, UID: binding.UID, ResourceVersion: binding.ResourceVersion,
	}}
	if isCFRole(binding.RoleRef) {
		trimmed.RoleRef, trimmed.Subjects = binding.RoleRef, binding.Subjects
	}
	return trimmed, nil
}

func isCFRole(ref rbacv1.RoleRef) bool {
	return ref.APIGroup == rbacv1.GroupName && ref.Kind == "ClusterRole" && slices.Contains(Roles, ref.Name)
}

// subjectKey is a subject as the user names the apiserver authenticates (Username), or a group.
func subjectKey(s rbacv1.Subject, bindingNamespace string) string {
	if s.Kind == rbacv1.GroupKind {
		return groupKey(s.Name)
	}
	return userKey(Username(s, bindingNamespace))
}

// Username is the user name that the apiserver authenticates for a subject that is a User or
// a ServiceAccount (system:serviceaccount:<namespace>:<name>; a subject without a namespace is
// one of its binding's), "" for a group.
func Username(s rbacv1.Subject, bindingNamespace string) string {
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		return auth.ServiceAccountPrefix + cmp.Or(s.Namespace, bindingNamespace) + ":" + s.Name
	case rbacv1.GroupKind:
		return ""
	}
	return s.Name
}

func userKey(name string) string  { return "User:" + name }
func groupKey(name string) string { return "Group:" + name }

// Namespaces returns the namespaces in which the user, or a group the user is in, is bound to
// a CF role. reader must hold the index of IndexRoleBindings.
func Namespaces(ctx context.Context, reader client.Reader, user auth.Identity) (sets.Set[string], error) {
	keys := []string{userKey(user.Name)}
	for _, group := range user.Groups {
		keys = append(keys, groupKey(group))
	}
	namespaces := sets.New[string]()
	for _, key := range keys {
		bindings := &rbacv1.RoleBindingList{}
		if err := reader.List(ctx, bindings, client.MatchingFields{subjectIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for _, b := range bindings.Items {
			namespaces.Insert(b.Namespace)
		}
	}
	return namespaces, nil
}

// NameField is the field by which Visible finds a space from its namespace's name: a field
// selector for the apiserver, an index (of that name) for a cache.
const NameField = "metadata.name"

// Visibility is what a user may see in the lists: every org and space, for whoever may list
// the orgs of the root namespace (operators); else the orgs and spaces the user is a member of.
type Visibility struct {
	all bool
	// namespaces are those of the user's CF roles.
	namespaces sets.Set[string]
	// orgsOfSpaces are the orgs of the spaces among namespaces: a member of a space sees its org.
	orgsOfSpaces sets.Set[string]
}

// Visible returns what the user of session may see. Whether the user may list the orgs is
// asked of the apiserver with the user's own credentials (a SelfSubjectAccessReview), so
// that cluster-wide rights (cf-operator, cluster-admin) count as RBAC grants them. reader must
// hold the index of IndexRoleBindings and find CFSpaces by NameField.
func Visible(ctx context.Context, reader client.Reader, session *auth.Session, root string) (Visibility, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: root, Verb: "list", Group: cfv1alpha1.GroupVersion.Group, Resource: "cforgs",
		},
	}}
	if err := session.Client.Create(ctx, review); err != nil {
		return Visibility{}, fmt.Errorf("SelfSubjectAccessReview: %w", err)
	}
	if review.Status.Allowed {
		return Visibility{all: true}, nil
	}
	namespaces, err := Namespaces(ctx, reader, session.Identity)
	if err != nil {
		return Visibility{}, err
	}
	v := Visibility{namespaces: namespaces, orgsOfSpaces: sets.New[string]()}
	for namespace := range namespaces {
		spaces := &cfv1alpha1.CFSpaceList{}
		if err := reader.List(ctx, spaces, client.MatchingFields{NameField: namespace}, client.UnsafeDisableDeepCopy); err != nil {
			return Visibility{}, err
		}
		for _, space := range spaces.Items {
			v.orgsOfSpaces.Insert(space.Namespace)
		}
	}
	return v, nil
}

// Org says whether the user sees the org: a member of it or of one of its spaces.
func (v Visibility) Org(org *cfv1alpha1.CFOrg) bool {
	return v.all || v.namespaces.Has(org.Name) || v.orgsOfSpaces.Has(org.Name)
}

// Space says whether the user sees the space: a member of it or of its org (whose bindings HNC
// copies into the space a moment later).
func (v Visibility) Space(space *cfv1alpha1.CFSpace) bool {
	return v.all || v.namespaces.Has(space.Name) || v.namespaces.Has(space.Namespace)
}
