package cfapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// info is GET /v3/info, which needs no credentials.
func (s *server) info(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, presenter.ForInfo(s.baseURL(r)))
	return nil
}

// listStacks is GET /v3/stacks: kpack's ClusterStacks, which an app's lifecycle names, read with
// the API's own rights: they are the same for every user.
func (s *server) listStacks(w http.ResponseWriter, r *http.Request) error {
	q, err := parseList(r)
	if err != nil {
		return err
	}
	stacks, err := s.clusterStacks(r)
	if err != nil {
		return err
	}
	base := s.baseURL(r)
	writeList(s, w, r, q, stacks, func(stack *kpackv1alpha2.ClusterStack) presenter.Stack { return presenter.ForStack(stack, base) })
	return nil
}

// clusterStacks are kpack's ClusterStacks, read with the API's own rights: the stacks that
// cf stacks lists, and that name the stacks of buildpacks and droplets. The slice is shared with
// the requests that read it at the same time: read it only.
func (s *server) clusterStacks(r *http.Request) ([]kpackv1alpha2.ClusterStack, error) {
	return readOwn(s, r, "stacks", cf.Stacks)
}

// ownReadTimeout bounds a read with the API's own rights, which requests share (readOwn).
const ownReadTimeout = 30 * time.Second

// readOwn reads what read reads with the API's own rights, for the request's user, within the
// user's share of such reads (ownReads); the requests that ask for the same (key) while one
// reads it share its answer, so that users asking at once cost the apiserver one read.
func readOwn[T any](s *server, r *http.Request, key string, read func(context.Context, client.Reader) (T, error)) (T, error) {
	var none T
	if err := s.ownReads.allow(sessionOf(r).Identity.Name); err != nil {
		return none, err
	}
	shared, err, _ := s.reading.Do(key, func() (any, error) {
		// Not the request's own context: the requests sharing the read outlive its first.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), ownReadTimeout)
		defer cancel()
		return read(ctx, s.live)
	})
	if err != nil {
		return none, ownReadFailed(err)
	}
	value, _ := shared.(T) // nil for a read that found nothing
	return value, nil
}

// ownReadFailed is the error of a read with the API's own rights: the API's failure (its
// ServiceAccount lacks a right), not the user's, so it is not mapped to what the user may not
// do; the cause is logged.
func ownReadFailed(err error) error {
	return fmt.Errorf("read with the API's own rights: %v", err)
}

// buildpackOrders are the order_by fields of CF's buildpack list, by position unless asked.
var buildpackOrders = []string{"position", "created_at", "updated_at"}

// listBuildpacks is GET /v3/buildpacks: the buildpacks of kpack's ClusterStores (cf.Buildpacks),
// which an app's lifecycle names (kubectl cf push -b completes the same), read with the API's
// own rights. The lifecycle filter matches cf-hnc's only lifecycle, buildpack.
func (s *server) listBuildpacks(w http.ResponseWriter, r *http.Request) error {
	q, err := parseList(r, buildpackOrders...)
	if err != nil {
		return err
	}
	stores, err := readOwn(s, r, "stores", cf.Stores)
	if err != nil {
		return err
	}
	stacks, err := s.clusterStacks(r)
	if err != nil {
		return err
	}
	buildpacks := cf.Buildpacks(stores, stacks)
	if lifecycles := filter(r, "lifecycle"); lifecycles != nil && !slices.Contains(lifecycles, string(cfv1alpha1.BuildpackLifecycle)) {
		buildpacks = nil
	}
	if stackNames := filter(r, "stacks"); stackNames != nil {
		buildpacks = slices.DeleteFunc(buildpacks, func(b cf.Buildpack) bool { return !slices.Contains(stackNames, b.Stack) })
	}
	base := s.baseURL(r)
	writeList(s, w, r, q, buildpacks, func(b *cf.Buildpack) presenter.Buildpack { return presenter.ForBuildpack(*b, base) })
	return nil
}
