package cf

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// InvalidOrg is Cloud Foundry's answer to a space in an org that does not exist, is being
// deleted, or that the user does not see.
const InvalidOrg = "Invalid organization. Ensure the organization exists and you have access to it."

// CreateSpace creates a space of a display name in an org, named guid (a new UUID if it is
// empty), as the user: org managers and operators may. cf-hnc makes its namespace, named guid,
// under the org's; AwaitReady waits for it.
func CreateSpace(ctx context.Context, c client.Client, org *cfv1alpha1.CFOrg, name, guid string) (*cfv1alpha1.CFSpace, error) {
	if !org.DeletionTimestamp.IsZero() {
		return nil, unprocessable(InvalidOrg)
	}
	space := &cfv1alpha1.CFSpace{
		ObjectMeta: metav1.ObjectMeta{Namespace: org.Name, Name: newGUID(guid)},
		Spec:       cfv1alpha1.CFSpaceSpec{DisplayName: name},
	}
	return space, about(SpaceResource, c.Create(ctx, space))
}

// FindSpace returns the space that key names in an org, by GUID or by display name, as the
// user.
func FindSpace(ctx context.Context, c client.Client, org *cfv1alpha1.CFOrg, key string) (*cfv1alpha1.CFSpace, error) {
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := c.List(ctx, spaces, client.InNamespace(org.Name)); err != nil {
		return nil, fmt.Errorf("listing the spaces of org %q: %w", org.Spec.DisplayName, err)
	}
	if space := Lookup(spaces.Items, key); space != nil {
		return space, nil
	}
	return nil, fmt.Errorf("space %q not found: org %q has no space with that name or GUID", key, org.Spec.DisplayName)
}

// SpaceOfNamespace finds the space whose namespace is namespace, from the labels cf-hnc puts on
// space namespaces, and its org's name from the org's namespace. The CF roles let their members
// read these: a space role the space's namespace, an org role (which every member of a space
// holds, as in Cloud Foundry) the org's namespace and the CFSpace in it. The CFOrg itself, in
// the root namespace, is never read: no CF role may be bound there.
func SpaceOfNamespace(ctx context.Context, c client.Client, namespace string) (space *cfv1alpha1.CFSpace, orgName string, err error) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, "", fmt.Errorf("namespace %q: you have no CF role in it (a space role in the space, or an org role in its org): %w", namespace, err)
		}
		return nil, "", fmt.Errorf("namespace %q: %w", namespace, err)
	}
	orgGUID, spaceGUID := ns.Labels[cfv1alpha1.OrgGUIDLabel], ns.Labels[cfv1alpha1.SpaceGUIDLabel]
	if spaceGUID != namespace || orgGUID == "" {
		return nil, "", fmt.Errorf("namespace %q is not a space's: name the space with --org ORG --space SPACE", namespace)
	}
	space = &cfv1alpha1.CFSpace{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: orgGUID, Name: spaceGUID}, space); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, "", fmt.Errorf("the space of namespace %q: reading it takes a role in its org, which every member of a space "+
				"holds in Cloud Foundry: ask an org manager to bind cf-org-user to you in namespace %s: %w", namespace, orgGUID, err)
		}
		return nil, "", fmt.Errorf("the space of namespace %q: %w", namespace, err)
	}
	orgNamespace := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: orgGUID}, orgNamespace); err != nil {
		return nil, "", fmt.Errorf("the org of namespace %q: %w", namespace, err)
	}
	return space, orgNamespace.Annotations[cfv1alpha1.OrgNameAnnotation], nil
}

// BuildReadiness is a space's BuildReady condition for a person, or that cf-hnc has not resolved
// its build configuration yet.
func BuildReadiness(space *cfv1alpha1.CFSpace) string {
	if c := meta.FindStatusCondition(space.Status.Conditions, cfv1alpha1.BuildReadyCondition); c != nil {
		return fmt.Sprintf("BuildReady is %s, %s: %s", c.Status, c.Reason, c.Message)
	}
	return "cf-hnc has not resolved its build configuration yet"
}
