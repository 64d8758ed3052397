package cfapi

import (
	"net/http"
	"slices"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// A droplet is a staged CFBuild, and has its GUID: an app's current droplet names the CFBuild.
// A build that has not staged has no droplet: "Droplet not found", the text that the cf CLI's
// app summary passes over.

// getDroplet is GET /v3/droplets/:guid, which cf push reads once the build is STAGED.
func (s *server) getDroplet(w http.ResponseWriter, r *http.Request) error {
	build, err := s.findBuild(r, r.PathValue("guid"), cf.DropletResource)
	if err != nil {
		return err
	}
	if build.StagedDroplet() == nil {
		return &cf.NotFoundError{Resource: cf.DropletResource}
	}
	return s.writeDroplet(w, r, build)
}

// getAppCurrentDroplet is GET /v3/apps/:guid/droplets/current: the droplet the app runs, which
// every app summary (cf app, cf push, cf restage) reads.
func (s *server) getAppCurrentDroplet(w http.ResponseWriter, r *http.Request) error {
	app, err := s.findApp(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	build, err := cf.CurrentDroplet(r.Context(), userOf(r).Client, app)
	if err != nil {
		return err
	}
	return s.writeDroplet(w, r, build)
}

// writeDroplet answers the droplet of a staged build, on the stack that cf.DropletStack names.
func (s *server) writeDroplet(w http.ResponseWriter, r *http.Request, build *cfv1alpha1.CFBuild) error {
	stacks, err := s.clusterStacks(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForDroplet(build, cf.DropletStack(build.StagedDroplet(), stacks), s.baseURL(r)))
	return nil
}

// listAppDroplets is GET /v3/apps/:guid/droplets (cf droplets): the app's staged builds.
func (s *server) listAppDroplets(w http.ResponseWriter, r *http.Request) error {
	app, err := s.findApp(r, r.PathValue("guid"))
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
	q, err := parseList(r, createdOrUpdated...)
	if err != nil {
		return err
	}
	stacks, err := s.clusterStacks(r)
	if err != nil {
		return err
	}
	base := s.baseURL(r)
	states := filter(r, "states")
	staged := states == nil || slices.Contains(states, string(cfv1alpha1.BuildStaged))
	return writeRead(s, w, r, q, func(visit func(*cfv1alpha1.CFBuild)) error {
		return cf.Droplets(r.Context(), userOf(r).Client, space, visit)
	}, func(b *cfv1alpha1.CFBuild) (presenter.Droplet, bool) {
		if !staged || !matches(b) {
			return presenter.Droplet{}, false
		}
		return presenter.ForDroplet(b, cf.DropletStack(b.StagedDroplet(), stacks), base), true
	})
}

// getCurrentDroplet is GET /v3/apps/:guid/relationships/current_droplet.
func (s *server) getCurrentDroplet(w http.ResponseWriter, r *http.Request) error {
	app, err := s.findApp(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	if app.Spec.CurrentDropletRef.Name == "" {
		return &cf.NotFoundError{Resource: cf.DropletResource}
	}
	writeJSON(w, http.StatusOK, presenter.ForCurrentDroplet(app, s.baseURL(r)))
	return nil
}

// currentDropletRequest is the body of PATCH /v3/apps/:guid/relationships/current_droplet.
type currentDropletRequest struct {
	Data *struct {
		GUID string `json:"guid"`
	} `json:"data"`
}

// setCurrentDroplet is PATCH /v3/apps/:guid/relationships/current_droplet, as the user
// (cf.AssignDroplet).
func (s *server) setCurrentDroplet(w http.ResponseWriter, r *http.Request) error {
	var req currentDropletRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	app, err := s.findApp(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	guid := ""
	if req.Data != nil {
		guid = req.Data.GUID
	}
	if err := cf.AssignDroplet(r.Context(), userOf(r).Client, app, guid); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForCurrentDroplet(app, s.baseURL(r)))
	return nil
}
