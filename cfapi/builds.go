package cfapi

import (
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

const buildResource = "Build"

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

// createBuild is POST /v3/builds: a CFBuild of the package's app and the package, created as the
// user, with no lifecycle data of its own, so that cf-hnc stages it with the app's.
func (s *server) createBuild(w http.ResponseWriter, r *http.Request) error {
	var req createBuildRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	session := sessionOf(r)
	pkg, err := s.findPackage(r, req.Package.GUID)
	if err := notFoundAs(err, unusablePackage); err != nil {
		return err
	}
	if presenter.PackageState(pkg) != presenter.PackageReady {
		return cferror.UnprocessableEntity("Package " + pkg.Name + " has no bits yet: upload them before staging it")
	}
	app := &cfv1alpha1.CFApp{}
	if err := session.Client.Get(r.Context(), client.ObjectKey{Namespace: pkg.Namespace, Name: pkg.Spec.AppRef.Name}, app); err != nil {
		return cferror.FromKubernetes(err, appResource)
	}
	build := &cfv1alpha1.CFBuild{
		ObjectMeta: metav1.ObjectMeta{Namespace: pkg.Namespace, Name: string(uuid.NewUUID()), OwnerReferences: cfv1alpha1.OwnedByApp(app)},
		Spec: cfv1alpha1.CFBuildSpec{
			AppRef:     corev1.LocalObjectReference{Name: app.Name},
			PackageRef: corev1.LocalObjectReference{Name: pkg.Name},
			Lifecycle:  cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle},
		},
	}
	if err := session.Client.Create(r.Context(), build); err != nil {
		return cferror.FromKubernetes(err, buildResource)
	}
	writeJSON(w, http.StatusCreated, presenter.ForBuild(build, s.baseURL(r)))
	return nil
}

// getBuild is GET /v3/builds/:guid, which the cf CLI polls while the build is STAGING.
func (s *server) getBuild(w http.ResponseWriter, r *http.Request) error {
	build, err := s.findBuild(r, r.PathValue("guid"), buildResource)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForBuild(build, s.baseURL(r)))
	return nil
}

// findBuild returns the CFBuild of guid if the user sees it; else CF's "<resource> not found".
func (s *server) findBuild(r *http.Request, guid, resource string) (*cfv1alpha1.CFBuild, error) {
	build := &cfv1alpha1.CFBuild{}
	found, err := s.getVisible(r.Context(), sessionOf(r), guid, build)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, cferror.ResourceNotFound(resource)
	}
	return build, nil
}
