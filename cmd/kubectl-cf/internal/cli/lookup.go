package cli

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// findOrg returns the org that key names in the root namespace: by GUID, or by display name.
func (s *session) findOrg(ctx context.Context, c client.Client, key string) (*cfv1alpha1.CFOrg, error) {
	orgs := &cfv1alpha1.CFOrgList{}
	if err := c.List(ctx, orgs, client.InNamespace(s.root)); err != nil {
		return nil, fmt.Errorf("listing orgs: %w", err)
	}
	if org := lookup(orgs.Items, key); org != nil {
		return org, nil
	}
	return nil, fmt.Errorf("org %q not found: no org in namespace %q has that name or GUID", key, s.root)
}

// findSpace returns the space that key names in an org: by GUID, or by display name.
func findSpace(ctx context.Context, c client.Client, org *cfv1alpha1.CFOrg, key string) (*cfv1alpha1.CFSpace, error) {
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := c.List(ctx, spaces, client.InNamespace(org.Name)); err != nil {
		return nil, fmt.Errorf("listing the spaces of org %q: %w", org.Spec.DisplayName, err)
	}
	if space := lookup(spaces.Items, key); space != nil {
		return space, nil
	}
	return nil, fmt.Errorf("space %q not found: org %q has no space with that name or GUID", key, org.Spec.DisplayName)
}

// lookup returns the item whose name (GUID) is key or, failing that, the one whose display name
// is key, compared case-insensitively as Cloud Foundry does. If a race let two live items share
// the name, the oldest wins, as in cf-hnc's reconcilers: the other is never made ready.
func lookup[T any, P interface {
	*T
	displayNamed
}](items []T, key string) P {
	var found P
	for i := range items {
		item := P(&items[i])
		if item.GetName() == key {
			return item
		}
		if !item.GetDeletionTimestamp().IsZero() || !strings.EqualFold(item.GetDisplayName(), key) {
			continue
		}
		if found == nil || olderThan(item, found) {
			found = item
		}
	}
	return found
}

func olderThan(a, b client.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.GetName() < b.GetName()
}
