package cli

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// clientAndOrg returns a client of the session's cluster and the org that key names there.
func (s *session) clientAndOrg(ctx context.Context, key string) (client.Client, *cfv1alpha1.CFOrg, error) {
	c, err := s.client()
	if err != nil {
		return nil, nil, err
	}
	org, err := s.findOrg(ctx, c, key)
	return c, org, err
}

// findOrg returns the org that key names in the root namespace: by GUID, or by display name.
func (s *session) findOrg(ctx context.Context, c client.Client, key string) (*cfv1alpha1.CFOrg, error) {
	orgs := &cfv1alpha1.CFOrgList{}
	if err := c.List(ctx, orgs, client.InNamespace(s.root)); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("you may not list orgs (only operators may); name your space by its namespace instead, --namespace <space GUID>: %w", err)
		}
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

// findApp returns the app that key names in a space: by GUID, or by name. Cloud Foundry's app
// names are unique per space, ignoring case, as org and space names are; the same ownership
// rule picks one should two share a name.
func findApp(ctx context.Context, c client.Client, t target, key string) (*cfv1alpha1.CFApp, error) {
	app, err := lookupApp(ctx, c, t.space.Name, key)
	if err != nil {
		return nil, err
	}
	if app == nil {
		return nil, fmt.Errorf("app %q not found: %s has no app with that name or GUID", key, t)
	}
	return app, nil
}

// lookupApp returns the app that key names in a space namespace, or nil.
func lookupApp(ctx context.Context, c client.Client, namespace, key string) (*cfv1alpha1.CFApp, error) {
	apps := &cfv1alpha1.CFAppList{}
	if err := c.List(ctx, apps, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing apps: %w", err)
	}
	named := make([]namedApp, len(apps.Items))
	for i := range apps.Items {
		named[i] = namedApp{apps.Items[i]}
	}
	if found := lookup(named, key); found != nil {
		return &found.CFApp, nil
	}
	return nil, nil
}

// namedApp gives a CFApp the display-name accessor that the ownership rule reads.
type namedApp struct{ cfv1alpha1.CFApp }

// GetDisplayName returns the app's name.
func (a *namedApp) GetDisplayName() string { return a.Spec.DisplayName }

// lookup returns the item whose name (GUID) is key or, failing that, the one that owns key as
// its display name by api/v1alpha1's rule: compared case-insensitively as Cloud Foundry does,
// the oldest live one winning, as in cf-hnc's reconcilers (the other is never made ready).
func lookup[T any, P interface {
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
