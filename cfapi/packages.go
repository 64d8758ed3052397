package cfapi

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/listing"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
	"code.cloudfoundry.org/cf-hnc/internal/sourceimage"
)

const packageResource = "Package"

// maxPackageSize bounds an uploaded zip, and the files it unpacks to, as Cloud Controller's
// default max_package_size does: the zip is kept on disk while it is converted, and the image
// in the space's registry.
const maxPackageSize = 1 << 30


// createPackageRequest is the body of POST /v3/packages (cli:actor/v7action/package.go).
type createPackageRequest struct {
	Type          string `json:"type"`
	Relationships struct {
		App guidData `json:"app"`
	} `json:"relationships"`
}

// createPackage is POST /v3/packages: a CFPackage of the app, in the app's space, created as the
// user, without bits until they are uploaded.
func (s *server) createPackage(w http.ResponseWriter, r *http.Request) error {
	var req createPackageRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Type != string(cfv1alpha1.BitsPackage) {
		return cferror.UnprocessableEntity(fmt.Sprintf("Type %q is not a package cf-hnc stages: it stages bits packages", req.Type))
	}
	app, err := s.findApp(r.Context(), sessionOf(r), req.Relationships.App.Data.GUID)
	if isNotFound(err) {
		return cferror.UnprocessableEntity("Unable to use app. Ensure that the app exists and you have access to it.")
	}
	if err != nil {
		return err
	}
	pkg := &cfv1alpha1.CFPackage{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: string(uuid.NewUUID()), OwnerReferences: cfv1alpha1.OwnedByApp(&app.CFApp)},
		Spec:       cfv1alpha1.CFPackageSpec{Type: cfv1alpha1.BitsPackage, AppRef: corev1.LocalObjectReference{Name: app.Name}},
	}
	if err := sessionOf(r).Client.Create(r.Context(), pkg); err != nil {
		return cferror.FromKubernetes(err, packageResource)
	}
	writeJSON(w, http.StatusCreated, presenter.ForPackage(pkg, s.baseURL(r)))
	return nil
}

// packageOrders are the order_by fields of CF's package list.
var packageOrders = []string{"created_at", "updated_at"}

// listPackages is GET /v3/packages: the packages of the spaces the user sees, narrowed by
// app_guids, space_guids and states (cf restage asks for the app's newest READY one).
func (s *server) listPackages(w http.ResponseWriter, r *http.Request) error {
	q, err := listing.Parse(r.URL.Query(), packageOrders...)
	if err != nil {
		return err
	}
	session := sessionOf(r)
	spaces, err := s.visibleSpaces(r.Context(), session, listing.Values(r.URL.Query(), "space_guids"))
	if err != nil {
		return err
	}
	pkgs, err := listVisible(r.Context(), session, spaces, func() *cfv1alpha1.CFPackageList { return &cfv1alpha1.CFPackageList{} },
		func(l *cfv1alpha1.CFPackageList) []cfv1alpha1.CFPackage { return l.Items })
	if err != nil {
		return err
	}
	apps, states := listing.Values(r.URL.Query(), "app_guids"), listing.Values(r.URL.Query(), "states")
	base := s.baseURL(r)
	var presented []presenter.Package
	for i := range pkgs {
		p := presenter.ForPackage(&pkgs[i], base)
		if (apps == nil || slices.Contains(apps, pkgs[i].Spec.AppRef.Name)) && (states == nil || slices.Contains(states, p.State)) {
			presented = append(presented, p)
		}
	}
	page, total := listing.Apply(presented, q)
	writeJSON(w, http.StatusOK, presenter.ForList(page, total, q, base, r.URL.Path))
	return nil
}

// getPackage is GET /v3/packages/:guid.
func (s *server) getPackage(w http.ResponseWriter, r *http.Request) error {
	pkg, err := s.findPackage(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForPackage(pkg, s.baseURL(r)))
	return nil
}

// findPackage returns the package of guid if the user sees it; else CF's "Package not found".
func (s *server) findPackage(r *http.Request, guid string) (*cfv1alpha1.CFPackage, error) {
	pkg := &cfv1alpha1.CFPackage{}
	found, err := s.getVisible(r.Context(), sessionOf(r), guid, pkg)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, cferror.ResourceNotFound(packageResource)
	}
	return pkg, nil
}

// uploadPackage is POST /v3/packages/:guid/upload: the cf CLI's zip of the app's files (the
// multipart field bits; it matches no resources, so the field resources is empty) becomes the
// package image that kubectl cf push makes, pushed to the app's package repository with the
// space's registry credentials, which the user reads. The package names the image by digest
// and is READY when the answer comes.
func (s *server) uploadPackage(w http.ResponseWriter, r *http.Request) error {
	ctx, session := r.Context(), sessionOf(r)
	pkg, err := s.findPackage(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	if pkg.Spec.Source.Registry.Image != "" {
		return cferror.UnprocessableEntity("Package " + pkg.Name + " has its bits already: create a new package to upload again")
	}
	space, err := s.visibleSpace(r, pkg.Namespace)
	if err != nil {
		return err
	}
	build := space.Status.Build
	if build == nil || build.DropletRepositoryPrefix == "" || len(build.RegistryCredentials) == 0 {
		return cferror.UnprocessableEntity(fmt.Sprintf("Space %q has no registry to keep packages in yet (%s); an operator places it with kubectl cf set-registry",
			space.Spec.DisplayName, buildReadiness(space)))
	}
	keychain, err := sourceimage.Keychain(ctx, session.Client, space)
	if err != nil {
		return cferror.FromKubernetes(err, "Secret")
	}
	dir, err := os.MkdirTemp("", "cfapi-upload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	zipPath, err := receiveBits(w, r, dir)
	if err != nil {
		return err
	}
	layerPath, err := convertZip(zipPath, dir)
	if err != nil {
		return err
	}
	img, err := sourceimage.Image(layerPath)
	if err != nil {
		return err
	}
	ref, err := sourceimage.Push(ctx, keychain, img, build.DropletRepositoryPrefix, pkg.Spec.AppRef.Name, pkg.Name)
	if err != nil {
		return cferror.ServiceUnavailable("The space's registry did not take the package: " + err.Error())
	}
	patch := client.MergeFromWithOptions(pkg.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pkg.Spec.Source.Registry = cfv1alpha1.Registry{Image: ref, ImagePullSecrets: build.SecretNames()}
	if err := session.Client.Patch(ctx, pkg, patch); err != nil {
		if apierrors.IsConflict(err) {
			return cferror.UnprocessableEntity("Package " + pkg.Name + " changed while its bits were uploaded: create a new package to upload again")
		}
		return cferror.FromKubernetes(err, packageResource)
	}
	writeJSON(w, http.StatusOK, presenter.ForPackage(pkg, s.baseURL(r)))
	return nil
}

// buildReadiness is the space's BuildReady condition for a person, or that cf-hnc has not
// resolved its build configuration yet.
func buildReadiness(space *cfv1alpha1.CFSpace) string {
	for _, c := range space.Status.Conditions {
		if c.Type == cfv1alpha1.BuildReadyCondition {
			return fmt.Sprintf("BuildReady is %s, %s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return "cf-hnc has not resolved its build configuration yet"
}

// tooLarge is CF's answer to an upload or a zip past maxPackageSize.
func tooLarge() error {
	return cferror.AppPackageInvalid(fmt.Sprintf("Package may not be larger than %d bytes", maxPackageSize))
}

// receiveBits streams the multipart upload into dir: the zip of the field bits, whose path it
// returns. The field resources, the files the cf CLI expects the API to hold already, must be
// empty: cf-hnc matches none (POST /v3/resource_matches).
func receiveBits(w http.ResponseWriter, r *http.Request, dir string) (string, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxPackageSize+maxBody)
	form, err := r.MultipartReader()
	if err != nil {
		return "", cferror.AppBitsUploadInvalid("send the zip as multipart/form-data in the field bits")
	}
	zipPath := ""
	for {
		part, err := form.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", uploadError(err)
		}
		switch part.FormName() {
		case "resources":
			if err := noResources(part); err != nil {
				return "", err
			}
		case "bits":
			if zipPath, err = saveZip(part, dir); err != nil {
				return "", err
			}
		}
	}
	if zipPath == "" {
		return "", cferror.AppBitsUploadInvalid("the field bits, the zip of the app's files, is missing")
	}
	return zipPath, nil
}

// uploadError is the error of reading the upload: past maxPackageSize, or not multipart.
func uploadError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return tooLarge()
	}
	return cferror.AppBitsUploadInvalid("the multipart form cannot be read: " + err.Error())
}

func noResources(part *multipart.Part) error {
	var resources []json.RawMessage
	if err := json.NewDecoder(io.LimitReader(part, maxBody)).Decode(&resources); err != nil {
		return cferror.AppBitsUploadInvalid("the field resources must be a JSON array")
	}
	if len(resources) > 0 {
		return cferror.AppBitsUploadInvalid("cf-hnc keeps no resources to match: upload every file in bits")
	}
	return nil
}

// saveZip writes the zip to a file in dir, refusing one past maxPackageSize.
func saveZip(part *multipart.Part, dir string) (string, error) {
	f, err := os.Create(filepath.Join(dir, "package.zip"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	n, err := io.Copy(f, io.LimitReader(part, maxPackageSize+1))
	if err != nil {
		return "", uploadError(err)
	}
	if n > maxPackageSize {
		return "", tooLarge()
	}
	return f.Name(), f.Close()
}

// convertZip writes the layer of the zip's files into dir and returns its path.
func convertZip(zipPath, dir string) (string, error) {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return "", cferror.AppPackageInvalid("the field bits is not a zip: " + err.Error())
	}
	defer zr.Close()
	out, err := os.Create(filepath.Join(dir, "layer.tar"))
	if err != nil {
		return "", err
	}
	defer out.Close()
	layer := sourceimage.NewLayer(out)
	if err := sourceimage.FromZip(&zr.Reader, layer, maxPackageSize); err != nil {
		if errors.Is(err, sourceimage.ErrInvalidZip) {
			return "", cferror.AppPackageInvalid(err.Error())
		}
		return "", err
	}
	if err := layer.Close(); err != nil {
		return "", err
	}
	return out.Name(), out.Close()
}
