package cfapi

import (
	"net/http"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// A droplet is a staged CFBuild, and has its GUID, as in Korifi: an app's current droplet names
// the CFBuild. A build that has not staged has no droplet: "Droplet not found", the text that
// the cf CLI's app summary passes over.

// getDroplet is GET /v3/droplets/:guid, which cf push reads once the build is STAGED.
func (s *server) getDroplet(w http.ResponseWriter, r *http.Request) error {
	build, err := s.findBuild(r, r.PathValue("guid"), dropletResource)
	if err != nil {
		return err
	}
	if !presenter.Staged(build) {
		return cferror.ResourceNotFound(dropletResource)
	}
	return s.writeDroplet(w, r, build)
}

// getAppCurrentDroplet is GET /v3/apps/:guid/droplets/current: the droplet the app runs, which
// every app summary (cf app, cf push, cf restage) reads.
func (s *server) getAppCurrentDroplet(w http.ResponseWriter, r *http.Request) error {
	session := sessionOf(r)
	app, err := s.findApp(r.Context(), session, r.PathValue("guid"))
	if err != nil {
		return err
	}
	current := app.Spec.CurrentDropletRef.Name
	if current == "" {
		return cferror.ResourceNotFound(dropletResource)
	}
	build := &cfv1alpha1.CFBuild{}
	err = session.Client.Get(r.Context(), client.ObjectKey{Namespace: app.Namespace, Name: current}, build)
	if unreadable(err) || (err == nil && !presenter.Staged(build)) {
		return cferror.ResourceNotFound(dropletResource)
	}
	if err != nil {
		return err
	}
	return s.writeDroplet(w, r, build)
}

// writeDroplet answers the droplet of a staged build.
func (s *server) writeDroplet(w http.ResponseWriter, r *http.Request, build *cfv1alpha1.CFBuild) error {
	stacks, err := s.clusterStacks(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForDroplet(build, stacks, s.baseURL(r)))
	return nil
}

// dropletOrders are the order_by fields of CF's droplet list.
var dropletOrders = []string{"created_at", "updated_at"}

// listAppDroplets is GET /v3/apps/:guid/droplets (cf droplets): the app's staged builds.
func (s *server) listAppDroplets(w http.ResponseWriter, r *http.Request) error {
	app, err := s.findApp(r.Context(), sessionOf(r), r.PathValue("guid"))
	if err != nil {
		return err
	}
	return s.writeDroplets(w, r, app.Namespace, func(build *cfv1alpha1.CFBuild) bool { return build.Spec.AppRef.Name == app.Name })
}

// listPackageDroplets is GET /v3/packages/:guid/droplets: the staged builds of the package. cf
// start and cf restart ask for the newest package's STAGED droplets, and stage the package
// first if it has none.
func (s *server) listPackageDroplets(w http.ResponseWriter, r *http.Request) error {
	pkg, err := s.findPackage(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	return s.writeDroplets(w, r, pkg.Namespace, func(build *cfv1alpha1.CFBuild) bool { return build.Spec.PackageRef.Name == pkg.Name })
}

// writeDroplets answers a page of the droplets of the builds of a space that match, read as
// the user. Every droplet is STAGED: a states filter without it matches none.
func (s *server) writeDroplets(w http.ResponseWriter, r *http.Request, space string, matches func(*cfv1alpha1.CFBuild) bool) error {
	q, err := listing.Parse(r.URL.Query(), dropletOrders...)
	if err != nil {
		return err
	}
	states := listing.Values(r.URL.Query(), "states")
	stagedWanted := states == nil || slices.Contains(states, presenter.BuildStaged)
	builds := &cfv1alpha1.CFBuildList{}
	if err := sessionOf(r).Client.List(r.Context(), builds, client.InNamespace(space)); err != nil {
		return cferror.FromKubernetes(err, dropletResource)
	}
	stacks, err := s.clusterStacks(r.Context())
	if err != nil {
		return err
	}
	base := s.baseURL(r)
	var presented []presenter.Droplet
	for i := range builds.Items {
		if build := &builds.Items[i]; stagedWanted && matches(build) && presenter.Staged(build) {
			presented = append(presented, presenter.ForDroplet(build, stacks, base))
		}
	}
	page, total := listing.Apply(presented, q)
	writeJSON(w, http.StatusOK, presenter.ForList(page, total, q, base, r.URL.Path))
	return nil
}
