package cfapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// A job's GUID is "<operation>~<resource GUID>": the API keeps no jobs, and derives a job's
// state from the resource whenever the cf CLI polls it, as Korifi does.
const jobSeparator = "~"

const jobResource = "Job"

// acceptJob answers 202 with the job's absolute URL in Location, which the cf CLI polls until
// the job is COMPLETE or FAILED.
func (s *server) acceptJob(w http.ResponseWriter, r *http.Request, operation, guid string) {
	w.Header().Set("Location", s.baseURL(r).JoinPath("v3", "jobs", operation+jobSeparator+guid).String())
	w.WriteHeader(http.StatusAccepted)
}

// getJob is GET /v3/jobs/:guid. An applied manifest's job is complete: the manifest was
// applied in its request. A deletion's job is processing while the object is being deleted,
// failed once that takes longer than DeleteTimeout (with what is in the way) or if it is not
// being deleted at all, and complete once it is gone.
func (s *server) getJob(w http.ResponseWriter, r *http.Request) error {
	guid := r.PathValue("guid")
	operation, resourceGUID, _ := strings.Cut(guid, jobSeparator)
	obj, kind, err := s.jobObject(r, operation, resourceGUID)
	if err != nil {
		return err
	}
	state, failure, started := presenter.JobComplete, (*cferror.Error)(nil), (*metav1.Time)(nil)
	if obj != nil {
		started = obj.GetDeletionTimestamp()
		state = presenter.JobProcessing
		if err := cf.DeletionFailure(obj, kind, s.cfg.DeleteTimeout, time.Now()); err != nil {
			state, failure = presenter.JobFailed, cfErrorOf(err)
		}
	}
	writeJSON(w, http.StatusOK, presenter.ForJob(guid, operation, state, started, failure, s.baseURL(r)))
	return nil
}

// jobObject reads the object that a delete job deletes, and names its kind; nil once it is
// gone, and for an applied manifest, whose job is done. A job answers only about what its user
// sees: an org's or a space's from the API's cache (which holds it while it is deleted), an
// app's as the user. To anybody else a job of an org or a space that exists reads as one of a
// GUID that names nothing: complete (review 3, N15). Whether a deletion that the user sees is
// done is then read with the API's own rights (readOwn) and not from the cache: the user's
// rights go with the namespace being deleted (HNC deletes the copies of the org's RoleBindings
// first), and a cache that lags would call the deletion done early. An app's deletion is read as
// the user, whose rights in the space stay while the app goes.
func (s *server) jobObject(r *http.Request, operation, guid string) (cf.Conditioned, string, error) {
	switch operation {
	case applyManifestJob:
		return nil, "", nil
	case appDeleteJob:
		app := &cfv1alpha1.CFApp{}
		err := s.dir.Find(r.Context(), userOf(r), guid, app, cf.AppResource)
		if cf.IsNotFound(err) {
			return nil, cf.AppResource, nil
		}
		return app, cf.AppResource, err
	case orgDeleteJob:
		if _, err := s.dir.Org(r.Context(), userOf(r), guid); err != nil {
			return nil, cf.OrgResource, ignoreNotFound(err)
		}
		org, err := readOwn(s, r, orgDeleteJob+jobSeparator+guid, func(ctx context.Context, live client.Reader) (cf.Conditioned, error) {
			return cf.DeletingOrg(ctx, live, s.cfg.RootNamespace, guid)
		})
		return org, cf.OrgResource, err
	case spaceDeleteJob:
		space, err := s.dir.Space(r.Context(), userOf(r), guid)
		if err != nil {
			return nil, cf.SpaceResource, ignoreNotFound(err)
		}
		deleting, err := readOwn(s, r, spaceDeleteJob+jobSeparator+space.Namespace+jobSeparator+guid,
			func(ctx context.Context, live client.Reader) (cf.Conditioned, error) {
				return cf.DeletingSpace(ctx, live, space.Namespace, guid)
			})
		return deleting, cf.SpaceResource, err
	}
	return nil, "", cferror.ResourceNotFound(jobResource)
}

// ignoreNotFound is nil for cf's NotFoundError, err otherwise.
func ignoreNotFound(err error) error {
	if cf.IsNotFound(err) {
		return nil
	}
	return err
}
