package cfapi

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/auth"
	"code.cloudfoundry.org/cf-hnc/cfapi/membership"
)

// The objects of spaces (apps, processes, packages, builds) are read as the user, in the spaces
// that the user sees.

// visibleSpaces are the namespaces of the spaces that the user sees, of those among guids if
// guids is not nil. Apps and processes are read as the user in each: Kubernetes cannot list
// the objects a user may read across namespaces.
func (s *server) visibleSpaces(ctx context.Context, session *auth.Session, guids []string) ([]string, error) {
	visible, err := membership.Visible(ctx, s.cache, session, s.cfg.RootNamespace)
	if err != nil {
		return nil, err
	}
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := s.cache.List(ctx, spaces, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var namespaces []string
	for i := range spaces.Items {
		if space := &spaces.Items[i]; visible.Space(space) && (guids == nil || slices.Contains(guids, space.Name)) {
			namespaces = append(namespaces, space.Name)
		}
	}
	slices.Sort(namespaces)
	return namespaces, nil
}

// getVisible reads obj, named guid, as the user, from the space the user sees that holds it;
// false if none does or the user may not read it there.
func (s *server) getVisible(ctx context.Context, session *auth.Session, guid string, obj client.Object) (bool, error) {
	spaces, err := s.visibleSpaces(ctx, session, nil)
	if err != nil {
		return false, err
	}
	for _, space := range spaces {
		err := session.Client.Get(ctx, client.ObjectKey{Namespace: space, Name: guid}, obj)
		switch {
		case err == nil:
			return true, nil
		case !unreadable(err):
			return false, err
		}
	}
	return false, nil
}

// unreadable says whether a read as the user found nothing there: the object does not exist,
// or the user may not read it, which a CF client is not told apart.
func unreadable(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsForbidden(err) }

// listVisible lists, as the user, list's kind in each of spaces, skipping the spaces where
// the user may not list it, and returns each list's items.
func listVisible[L client.ObjectList, T any](ctx context.Context, session *auth.Session, spaces []string, newList func() L, items func(L) []T) ([]T, error) {
	var all []T
	for _, space := range spaces {
		list := newList()
		err := session.Client.List(ctx, list, client.InNamespace(space))
		if apierrors.IsForbidden(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		all = append(all, items(list)...)
	}
	return all, nil
}
