package cfapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// info is GET /v3/info, which needs no credentials.
func (s *server) info(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, presenter.ForInfo(s.baseURL(r)))
	return nil
}

// listStacks is GET /v3/stacks: kpack's ClusterStacks, which an app's lifecycle names. They are
// cluster-scoped and the same for every user: the API reads them with its own rights.
func (s *server) listStacks(w http.ResponseWriter, r *http.Request) error {
	q, err := listing.Parse(r.URL.Query())
	if err != nil {
		return err
	}
	stacks, err := s.clusterStacks(r.Context())
	if err != nil {
		return err
	}
	base := s.baseURL(r)
	presented := make([]presenter.Stack, len(stacks))
	for i := range stacks {
		presented[i] = presenter.ForStack(&stacks[i], base)
	}
	page, total := listing.Apply(presented, q)
	writeJSON(w, http.StatusOK, presenter.ForList(page, total, q, base, r.URL.Path))
	return nil
}

// clusterStacks are kpack's ClusterStacks, read with the API's own rights: the stacks that
// cf stacks lists, and that name the stacks of buildpacks and droplets.
func (s *server) clusterStacks(ctx context.Context) ([]kpackv1alpha2.ClusterStack, error) {
	stacks := &kpackv1alpha2.ClusterStackList{}
	if err := s.live.List(ctx, stacks); err != nil {
		return nil, ownReadFailed(err)
	}
	return stacks.Items, nil
}

// ownReadFailed is the error of a read with the API's own rights: the API's failure (its
// ServiceAccount lacks a right), not the user's, so it is not mapped to what the user may not
// do; the cause is logged.
func ownReadFailed(err error) error {
	return fmt.Errorf("read with the API's own rights: %v", err)
}

// buildpackOrders are the order_by fields of CF's buildpack list, by position unless asked.
var buildpackOrders = []string{"position", "created_at", "updated_at"}

// listBuildpacks is GET /v3/buildpacks: the buildpacks of kpack's ClusterStores, which an
// app's lifecycle names (kubectl cf push -b completes the same), read with the API's own rights.
// The lifecycle filter matches cf-hnc's only lifecycle, buildpack.
func (s *server) listBuildpacks(w http.ResponseWriter, r *http.Request) error {
	q, err := listing.Parse(r.URL.Query(), buildpackOrders...)
	if err != nil {
		return err
	}
	stores := &kpackv1alpha2.ClusterStoreList{}
	if err := s.live.List(r.Context(), stores); err != nil {
		return ownReadFailed(err)
	}
	stacks, err := s.clusterStacks(r.Context())
	if err != nil {
		return err
	}
	base := s.baseURL(r)
	buildpacks := presenter.BuildpacksOf(stores.Items, stacks, base)
	if lifecycles := listing.Values(r.URL.Query(), "lifecycle"); lifecycles != nil && !slices.Contains(lifecycles, string(cfv1alpha1.BuildpackLifecycle)) {
		buildpacks = nil
	}
	if stackNames := listing.Values(r.URL.Query(), "stacks"); stackNames != nil {
		buildpacks = slices.DeleteFunc(buildpacks, func(b presenter.Buildpack) bool {
			return b.Stack == nil || !slices.Contains(stackNames, *b.Stack)
		})
	}
	page, total := listing.Apply(buildpacks, q)
	writeJSON(w, http.StatusOK, presenter.ForList(page, total, q, base, r.URL.Path))
	return nil
}
