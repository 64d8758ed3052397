package cf

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// Kubernetes' RBAC cannot filter a list: to say which orgs and spaces a user sees, the CF API
// reads the RoleBindings of the CF roles with its own read-only rights and matches their subjects
// against the user and the user's groups, as the kube-apiserver reports them. Unlike Korifi's, a
// binding to a group the user is in counts. The objects of spaces (apps, processes, packages,
// builds) are then read as the user, in each space the user sees.

// User is who acts: the name and groups the apiserver authenticated for the credentials, and a
// client that acts with them.
type User struct {
	Name   string
	Groups []string
	Client client.Client
}

// ServiceAccountPrefix starts the user name of every ServiceAccount: system:serviceaccount:<namespace>:<name>.
const ServiceAccountPrefix = "system:serviceaccount:"

// Roles are the ClusterRoles of config/rbac/cf_roles.yaml that make their subjects members of
// the namespace they are bound in: an org role in an org's namespace (HNC copies it into every
// space of the org), a space role in a space's.
var Roles = []string{"cf-org-manager", "cf-org-user", "cf-space-manager", "cf-space-developer", "cf-space-auditor"}

// subjectIndex indexes the RoleBindings of the CF roles by their subjects (subjectKey).
const subjectIndex = "cfapi.subject"

// NameField is the field by which a Directory finds a space from its namespace's name: a field
// selector for the apiserver, an index (of that name) for a cache.
const NameField = "metadata.name"

// IndexRoleBindings registers the index that a Directory reads, on a cache of RoleBindings.
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

// IndexSpaceNames registers the index by which a Directory finds a space by its name, on a
// cache of CFSpaces.
func IndexSpaceNames(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &cfv1alpha1.CFSpace{}, NameField, func(obj client.Object) []string {
		return []string{obj.GetName()}
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
		return ServiceAccountPrefix + cmp.Or(s.Namespace, bindingNamespace) + ":" + s.Name
	case rbacv1.GroupKind:
		return ""
	}
	return s.Name
}

func userKey(name string) string  { return "User:" + name }
func groupKey(name string) string { return "Group:" + name }

// Directory is what the CF API knows of the foundation with its own rights: the CFOrgs of the
// root namespace, every CFSpace (indexed by name, IndexSpaceNames) and the RoleBindings of the
// CF roles (indexed by subject, IndexRoleBindings), from its cache. It answers which of them a
// user sees; everything else is read as the user.
type Directory struct {
	Reader client.Reader
	Root   string
}

// Visibility is what a user may see in the lists: every org and space, for whoever may list
// the orgs of the root namespace (operators); else the orgs and spaces the user is a member of.
type Visibility struct {
	all bool
	// namespaces are those of the user's CF roles.
	namespaces sets.Set[string]
	// orgsOfSpaces are the orgs of the spaces among namespaces: a member of a space sees its org.
	orgsOfSpaces sets.Set[string]
}

// Visible returns what the user may see. Whether the user may list the orgs is asked of the
// apiserver with the user's own credentials (a SelfSubjectAccessReview), so that cluster-wide
// rights (cf-operator, cluster-admin) count as RBAC grants them.
func (d Directory) Visible(ctx context.Context, u User) (Visibility, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: d.Root, Verb: "list", Group: cfv1alpha1.GroupVersion.Group, Resource: "cforgs",
		},
	}}
	if err := u.Client.Create(ctx, review); err != nil {
		return Visibility{}, fmt.Errorf("SelfSubjectAccessReview: %w", err)
	}
	if review.Status.Allowed {
		return Visibility{all: true}, nil
	}
	namespaces, err := d.memberOf(ctx, u)
	if err != nil {
		return Visibility{}, err
	}
	v := Visibility{namespaces: namespaces, orgsOfSpaces: sets.New[string]()}
	for namespace := range namespaces {
		space, err := d.treeSpace(ctx, namespace)
		if err != nil {
			return Visibility{}, err
		}
		if space != nil {
			v.orgsOfSpaces.Insert(space.Namespace)
		}
	}
	return v, nil
}

// A CFSpace is named by the GUID of its namespace, and any org manager may create, in their own
// org, a CFSpace named like another org's space: HNC refuses its anchor, since the namespace is
// the other org's already, but the CFSpace stays (review 3, N9). So a GUID names the CFSpace
// that the tree agrees with: of the CFSpaces of that name, the one whose namespace cf-hnc saw
// HNC make under its org (Ready; only cf-hnc writes a CFSpace's status, and a namespace has one
// parent), or the only one, while it becomes ready, unless its anchor conflicts with the
// namespace of another. Several of which the tree chose none name no space until it does.

// treeSpace returns the CFSpace of the tree named guid, from the API's cache; nil if there is
// none, or if the tree has not chosen among several.
func (d Directory) treeSpace(ctx context.Context, guid string) (*cfv1alpha1.CFSpace, error) {
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := d.Reader.List(ctx, spaces, client.MatchingFields{NameField: guid}); err != nil {
		return nil, err
	}
	return ofTheTree(spaces.Items), nil
}

// ofTheTree is the CFSpace of the tree among CFSpaces of one name (treeSpace's rule); nil if
// there is none.
func ofTheTree(named []cfv1alpha1.CFSpace) *cfv1alpha1.CFSpace {
	var candidates, ready []*cfv1alpha1.CFSpace
	for i := range named {
		condition := meta.FindStatusCondition(named[i].Status.Conditions, cfv1alpha1.ReadyCondition)
		switch {
		case condition == nil:
			candidates = append(candidates, &named[i])
		case condition.Status == metav1.ConditionTrue:
			candidates, ready = append(candidates, &named[i]), append(ready, &named[i])
		case condition.Reason != cfv1alpha1.AnchorConflictReason:
			candidates = append(candidates, &named[i])
		}
	}
	switch {
	case len(candidates) == 1:
		return candidates[0]
	case len(ready) == 1:
		return ready[0]
	}
	return nil
}

// treeSpaces are those of spaces, all the CFSpaces of their names among them, that are their
// names' spaces of the tree (ofTheTree), in their order.
func treeSpaces(spaces []cfv1alpha1.CFSpace) []cfv1alpha1.CFSpace {
	byName := map[string][]cfv1alpha1.CFSpace{}
	for _, space := range spaces {
		byName[space.Name] = append(byName[space.Name], space)
	}
	return slices.DeleteFunc(spaces, func(space cfv1alpha1.CFSpace) bool {
		chosen := ofTheTree(byName[space.Name])
		return chosen == nil || chosen.Namespace != space.Namespace
	})
}

// memberOf returns the namespaces in which the user, or a group the user is in, is bound to a
// CF role.
func (d Directory) memberOf(ctx context.Context, u User) (sets.Set[string], error) {
	keys := []string{userKey(u.Name)}
	for _, group := range u.Groups {
		keys = append(keys, groupKey(group))
	}
	namespaces := sets.New[string]()
	for _, key := range keys {
		bindings := &rbacv1.RoleBindingList{}
		if err := d.Reader.List(ctx, bindings, client.MatchingFields{subjectIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for _, b := range bindings.Items {
			namespaces.Insert(b.Namespace)
		}
	}
	return namespaces, nil
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

// Orgs lists the orgs the user sees, without those being deleted.
func (d Directory) Orgs(ctx context.Context, u User) ([]cfv1alpha1.CFOrg, error) {
	visible, err := d.Visible(ctx, u)
	if err != nil {
		return nil, err
	}
	orgs := &cfv1alpha1.CFOrgList{}
	if err := d.Reader.List(ctx, orgs, client.InNamespace(d.Root)); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(orgs.Items, func(org cfv1alpha1.CFOrg) bool {
		return !org.DeletionTimestamp.IsZero() || !visible.Org(&org)
	}), nil
}

// Org returns the org of guid if the user sees it (also while it is deleted); else
// NotFoundError, whether or not it exists.
func (d Directory) Org(ctx context.Context, u User, guid string) (*cfv1alpha1.CFOrg, error) {
	org := &cfv1alpha1.CFOrg{}
	if err := d.Reader.Get(ctx, client.ObjectKey{Namespace: d.Root, Name: guid}, org); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &NotFoundError{Resource: OrgResource}
		}
		return nil, err
	}
	visible, err := d.Visible(ctx, u)
	if err != nil {
		return nil, err
	}
	if !visible.Org(org) {
		return nil, &NotFoundError{Resource: OrgResource}
	}
	return org, nil
}

// Spaces lists the spaces the user sees, of the orgs of orgGUIDs if it is not nil, without
// those being deleted, nor CFSpaces that are not the tree's space of their name.
func (d Directory) Spaces(ctx context.Context, u User, orgGUIDs []string) ([]cfv1alpha1.CFSpace, error) {
	visible, err := d.Visible(ctx, u)
	if err != nil {
		return nil, err
	}
	var spaces []cfv1alpha1.CFSpace
	for _, org := range orgGUIDs {
		list := &cfv1alpha1.CFSpaceList{}
		if err := d.Reader.List(ctx, list, client.InNamespace(org)); err != nil {
			return nil, err
		}
		for _, space := range list.Items {
			chosen, err := d.treeSpace(ctx, space.Name)
			if err != nil {
				return nil, err
			}
			if chosen != nil && chosen.Namespace == space.Namespace {
				spaces = append(spaces, space)
			}
		}
	}
	if orgGUIDs == nil {
		list := &cfv1alpha1.CFSpaceList{}
		if err := d.Reader.List(ctx, list); err != nil {
			return nil, err
		}
		spaces = treeSpaces(list.Items)
	}
	return slices.DeleteFunc(spaces, func(space cfv1alpha1.CFSpace) bool {
		return !space.DeletionTimestamp.IsZero() || !visible.Space(&space)
	}), nil
}

// Space returns the space of guid (the tree's, treeSpace) if the user sees it (also while it is
// deleted); else NotFoundError, whether or not it exists.
func (d Directory) Space(ctx context.Context, u User, guid string) (*cfv1alpha1.CFSpace, error) {
	space, err := d.treeSpace(ctx, guid)
	if err != nil {
		return nil, err
	}
	if space == nil {
		return nil, &NotFoundError{Resource: SpaceResource}
	}
	visible, err := d.Visible(ctx, u)
	if err != nil {
		return nil, err
	}
	if !visible.Space(space) {
		return nil, &NotFoundError{Resource: SpaceResource}
	}
	return space, nil
}

// SpaceNamespaces are the namespaces of the spaces that the user sees, of those among guids if
// guids is not nil, sorted. Apps and processes are read as the user in each: Kubernetes cannot
// list the objects a user may read across namespaces.
func (d Directory) SpaceNamespaces(ctx context.Context, u User, guids []string) ([]string, error) {
	visible, err := d.Visible(ctx, u)
	if err != nil {
		return nil, err
	}
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := d.Reader.List(ctx, spaces, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var namespaces []string
	for _, space := range treeSpaces(spaces.Items) {
		if visible.Space(&space) && (guids == nil || slices.Contains(guids, space.Name)) {
			namespaces = append(namespaces, space.Name)
		}
	}
	slices.Sort(namespaces)
	return namespaces, nil
}

// Find reads obj, named guid, as the user, from the space the user sees that holds it: Cloud
// Foundry names an app, a process, a package or a build by its GUID alone, and the GUID says
// nothing of its space. NotFoundError of resource if no space the user sees holds it.
func (d Directory) Find(ctx context.Context, u User, guid string, obj client.Object, resource string) error {
	spaces, err := d.SpaceNamespaces(ctx, u, nil)
	if err != nil {
		return err
	}
	for _, space := range spaces {
		err := u.Client.Get(ctx, client.ObjectKey{Namespace: space, Name: guid}, obj)
		switch {
		case err == nil:
			return nil
		case !unreadable(err):
			return about(resource, err)
		}
	}
	return &NotFoundError{Resource: resource}
}

// listChunk is how many objects a list as the user asks the apiserver for at once: however
// many objects a space holds, a list holds one chunk of them at a time, and what its caller
// keeps of each.
const listChunk = 100

// eachIn calls visit, in chunks of listChunk as the user lists them, with the objects of a kind
// in each of spaces, skipping the spaces where the user may not list them. visit keeps what it
// makes of an object, not the object itself: holding every object would undo the chunks.
func eachIn[L client.ObjectList, T any](ctx context.Context, c client.Client, spaces []string, newList func() L, items func(L) []T, visit func(*T)) error {
	for _, space := range spaces {
		opts := &client.ListOptions{Namespace: space, Limit: listChunk}
		for {
			list := newList()
			err := c.List(ctx, list, opts)
			if apierrors.IsForbidden(err) {
				break
			}
			if err != nil {
				return err
			}
			chunk := items(list)
			for i := range chunk {
				visit(&chunk[i])
			}
			if opts.Continue = list.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	return nil
}
