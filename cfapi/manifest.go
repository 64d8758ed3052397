package cfapi

import (
	"io"
	"net/http"

	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

// applyManifestJob is the job of an applied manifest: the manifest is applied in its request,
// so its job is complete.
const applyManifestJob = "space.apply_manifest"

// applyManifest is POST /v3/spaces/:guid/actions/apply_manifest (cf push): each application of
// the manifest is applied to the space (cf.ApplyApp), as the user, in the request. Its job is
// complete at once; what cf-hnc ignores of the manifest comes back as warnings.
func (s *server) applyManifest(w http.ResponseWriter, r *http.Request) error {
	space, err := s.dir.Space(r.Context(), userOf(r), r.PathValue("guid"))
	if err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return cferror.MessageParseError()
	}
	apps, warnings, err := cf.ParseManifest(data)
	if err != nil {
		return err
	}
	for _, change := range apps {
		if err := cf.ApplyApp(r.Context(), userOf(r).Client, space.Name, change); err != nil {
			return err
		}
	}
	for _, warning := range warnings {
		warn(w, warning)
	}
	s.acceptJob(w, r, applyManifestJob, space.Name)
	return nil
}

// manifestDiff is POST /v3/spaces/:guid/manifest_diff: cf-hnc does not compute what a manifest
// would change, and answers no difference, as Korifi does; the cf CLI only shows the diff.
func (s *server) manifestDiff(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.dir.Space(r.Context(), userOf(r), r.PathValue("guid")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Diff []struct{} `json:"diff"`
	}{[]struct{}{}})
	return nil
}
