package cli

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
)

// clientAndOrg returns a client of the session's cluster and the org that key names there.
func (s *session) clientAndOrg(ctx context.Context, key string) (client.Client, *cfv1alpha1.CFOrg, error) {
	c, err := s.client()
	if err != nil {
		return nil, nil, err
	}
	org, err := cf.FindOrg(ctx, c, s.root, key)
	return c, org, err
}

// findApp returns the app that key names in the target's space: by GUID, or by name. Cloud
// Foundry's app names are unique per space, ignoring case, as org and space names are; the same
// ownership rule picks one should two share a name.
func findApp(ctx context.Context, c client.Client, t target, key string) (*cfv1alpha1.CFApp, error) {
	app, err := cf.FindApp(ctx, c, t.space.Name, key)
	if err != nil {
		return nil, err
	}
	if app == nil {
		return nil, fmt.Errorf("app %q not found: %s has no app with that name or GUID", key, t)
	}
	return app, nil
}
