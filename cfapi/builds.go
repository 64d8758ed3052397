package cfapi

import (
	"net/http"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// createBuildRequest is the body of POST /v3/builds: the cf CLI names only the package
// (cli:resources/build_resource.go); the build stages with the app's lifecycle.
type createBuildRequest struct {
	Package struct {
		GUID string `json:"guid"`
	} `json:"package"`
}

// unusablePackage is CF's answer to a build of a package that does not exist or that the user
// does not see.
const unusablePackage = "Unable to use package. Ensure that the package exists and you have access to it."

// createBuild is POST /v3/builds: a build of the package, created as the user (cf.Stage).
func (s *server) createBuild(w http.ResponseWriter, r *http.Request) error {
	var req createBuildRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	pkg, err := s.findPackage(r, req.Package.GUID)
	if cf.IsNotFound(err) {
		return cferror.UnprocessableEntity(unusablePackage)
	}
	if err != nil {
		return err
	}
	build, err := cf.Stage(r.Context(), userOf(r).Client, pkg)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, presenter.ForBuild(build, s.baseURL(r)))
	return nil
}

// getBuild is GET /v3/builds/:guid, which the cf CLI polls while the build is STAGING.
func (s *server) getBuild(w http.ResponseWriter, r *http.Request) error {
	build, err := s.findBuild(r, r.PathValue("guid"), cf.BuildResource)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForBuild(build, s.baseURL(r)))
	return nil
}

// findBuild returns the CFBuild of guid if the user sees it; else CF's "<resource> not found".
func (s *server) findBuild(r *http.Request, guid, resource string) (*cfv1alpha1.CFBuild, error) {
	build := &cfv1alpha1.CFBuild{}
	return build, s.dir.Find(r.Context(), userOf(r), guid, build, resource)
}
