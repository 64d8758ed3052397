package cf

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// CreateOrg creates the org of a display name in the root namespace, named guid (a new UUID if
// it is empty), as the user: operators may. cf-hnc makes its namespace, named guid, under the
// root's; AwaitReady waits for it.
func CreateOrg(ctx context.Context, c client.Client, root, name, guid string) (*cfv1alpha1.CFOrg, error) {
	org := &cfv1alpha1.CFOrg{
		ObjectMeta: metav1.ObjectMeta{Namespace: root, Name: newGUID(guid)},
		Spec:       cfv1alpha1.CFOrgSpec{DisplayName: name},
	}
	return org, about(OrgResource, c.Create(ctx, org))
}

// FindOrg returns the org that key names in the root namespace, by GUID or by display name,
// listing the orgs as the user: only operators may.
func FindOrg(ctx context.Context, c client.Client, root, key string) (*cfv1alpha1.CFOrg, error) {
	orgs := &cfv1alpha1.CFOrgList{}
	if err := c.List(ctx, orgs, client.InNamespace(root)); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("you may not list orgs (only operators may); name your space by its namespace instead, --namespace <space GUID>: %w", err)
		}
		return nil, fmt.Errorf("listing orgs: %w", err)
	}
	if org := Lookup(orgs.Items, key); org != nil {
		return org, nil
	}
	return nil, fmt.Errorf("org %q not found: no org in namespace %q has that name or GUID", key, root)
}

// Delete deletes an org, a space or an app as the user. cf-hnc deletes an org's namespace
// with its spaces', a space's namespace, and the garbage collector an app's processes, builds
// and packages; the app goes in the foreground, once the processes that block its deletion are
// gone (the web process cf-hnc made).
func Delete(ctx context.Context, c client.Client, obj client.Object, resource string) error {
	var opts []client.DeleteOption
	if _, app := obj.(*cfv1alpha1.CFApp); app {
		opts = append(opts, client.PropagationPolicy(metav1.DeletePropagationForeground))
	}
	return about(resource, c.Delete(ctx, obj, opts...))
}

// Lookup returns the item whose name (GUID) is key or, failing that, the one that owns key as
// its display name by api/v1alpha1's rule: compared case-insensitively as Cloud Foundry does,
// the oldest live one winning, as in cf-hnc's reconcilers (the other is never made ready).
func Lookup[T any, P interface {
	*T
	cfv1alpha1.DisplayNamed
}](items []T, key string) P {
	for i := range items {
		if item := P(&items[i]); item.GetName() == key {
			return item
		}
	}
	return cfv1alpha1.DisplayNameOwner[T, P](items, key)
}

// newGUID is guid, or a new one if it is empty.
func newGUID(guid string) string {
	if guid == "" {
		return string(uuid.NewUUID())
	}
	return guid
}
