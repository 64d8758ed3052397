package cfapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"slices"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

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

// createPackage is POST /v3/packages: a package of the app, in the app's space, created as the
// user, without bits until they are uploaded.
func (s *server) createPackage(w http.ResponseWriter, r *http.Request) error {
	var req createPackageRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Type != string(cfv1alpha1.BitsPackage) {
		return cferror.UnprocessableEntity(fmt.Sprintf("Type %q is not a package cf-hnc stages: it stages bits packages", req.Type))
	}
	app, err := s.findApp(r, req.Relationships.App.Data.GUID)
	if cf.IsNotFound(err) {
		return cferror.UnprocessableEntity("Unable to use app. Ensure that the app exists and you have access to it.")
	}
	if err != nil {
		return err
	}
	pkg, err := cf.CreatePackage(r.Context(), userOf(r).Client, app)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, presenter.ForPackage(pkg, s.baseURL(r)))
	return nil
}

// listPackages is GET /v3/packages: the packages of the spaces the user sees, narrowed by
// app_guids, space_guids and states (cf restage asks for the app's newest READY one).
func (s *server) listPackages(w http.ResponseWriter, r *http.Request) error {
	q, err := parseList(r, createdOrUpdated...)
	if err != nil {
		return err
	}
	spaces, err := s.dir.SpaceNamespaces(r.Context(), userOf(r), filter(r, "space_guids"))
	if err != nil {
		return err
	}
	base := s.baseURL(r)
	apps, states := filter(r, "app_guids"), filter(r, "states")
	return writeRead(s, w, r, q, func(visit func(*cfv1alpha1.CFPackage)) error {
		return cf.PackagesIn(r.Context(), userOf(r).Client, spaces, visit)
	}, func(pkg *cfv1alpha1.CFPackage) (presenter.Package, bool) {
		p := presenter.ForPackage(pkg, base)
		return p, (apps == nil || slices.Contains(apps, pkg.Spec.AppRef.Name)) && (states == nil || slices.Contains(states, p.State))
	})
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
	return pkg, s.dir.Find(r.Context(), userOf(r), guid, pkg, cf.PackageResource)
}

// uploadPackage is POST /v3/packages/:guid/upload: the cf CLI's zip of the app's files (the
// multipart field bits; it matches no resources, so the field resources is empty) becomes the
// package image that kubectl cf push makes (cf.UploadPackage), staged in the API's scratch
// space while it is converted. The package names the image by digest and is READY when the
// answer comes.
func (s *server) uploadPackage(w http.ResponseWriter, r *http.Request) error {
	uploading(w, r)
	pkg, err := s.findPackage(r, r.PathValue("guid"))
	if err != nil {
		return err
	}
	space, err := s.dir.Space(r.Context(), userOf(r), pkg.Namespace)
	if err != nil {
		return err
	}
	var staged *upload
	defer func() { staged.done() }()
	if err := cf.UploadPackage(r.Context(), userOf(r).Client, space, pkg, func() (string, error) {
		var err error
		if staged, err = s.scratch.start(); err != nil {
			return "", err
		}
		return staged.receive(w, r)
	}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, presenter.ForPackage(pkg, s.baseURL(r)))
	return nil
}

// tooLarge is CF's answer to an upload or a zip past maxPackageSize.
func tooLarge() error {
	return cferror.AppPackageInvalid(fmt.Sprintf("Package may not be larger than %d bytes", maxPackageSize))
}

// receive streams the multipart upload into the upload's directory, the zip of the field bits,
// converts it into the source layer and returns the layer's path. The field resources, the
// files the cf CLI expects the API to hold already, must be empty: cf-hnc matches none (POST
// /v3/resource_matches).
func (u *upload) receive(w http.ResponseWriter, r *http.Request) (string, error) {
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
			if zipPath, err = u.saveZip(part); err != nil {
				return "", err
			}
		}
	}
	if zipPath == "" {
		return "", cferror.AppBitsUploadInvalid("the field bits, the zip of the app's files, is missing")
	}
	return u.convertZip(zipPath)
}

// uploadError is the error of reading or storing the upload: no room in the scratch space,
// past maxPackageSize, or not multipart.
func uploadError(err error) error {
	var answer *cferror.Error
	if errors.As(err, &answer) {
		return answer
	}
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

// saveZip writes the zip to a file of the upload, refusing one past maxPackageSize.
func (u *upload) saveZip(part *multipart.Part) (string, error) {
	f, err := u.create("package.zip")
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

// convertZip writes the layer of the zip's files into a file of the upload and returns its
// path.
func (u *upload) convertZip(zipPath string) (string, error) {
	f, err := os.Open(zipPath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	zr, err := cf.OpenZip(f, info.Size())
	switch {
	case errors.Is(err, cf.ErrInvalidZip):
		return "", cferror.AppPackageInvalid(err.Error())
	case err != nil:
		return "", cferror.AppPackageInvalid("the field bits is not a zip: " + err.Error())
	}
	out, err := u.create("layer.tar")
	if err != nil {
		return "", err
	}
	defer out.Close()
	layer := cf.NewSourceLayer(out)
	if err := cf.ZipToLayer(zr, layer, maxPackageSize); err != nil {
		if errors.Is(err, cf.ErrInvalidZip) {
			return "", cferror.AppPackageInvalid(err.Error())
		}
		return "", err
	}
	if err := layer.Close(); err != nil {
		return "", err
	}
	return out.Name(), out.Close()
}
