package cfapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/auth"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/membership"
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
// applied in its request. Whether an org's or a space's deletion is done is read with the API's
// own rights and not from its cache: the user's rights go with the namespace being deleted (HNC
// deletes the copies of the org's RoleBindings first), and a cache that lags would call the
// deletion done early. A job thus tells any authenticated user whether a GUID names an org or a
// space that exists. An app's deletion is read as the user, whose rights in the space stay
// while the app goes.
func (s *server) getJob(w http.ResponseWriter, r *http.Request) error {
	guid := r.PathValue("guid")
	operation, resourceGUID, _ := strings.Cut(guid, jobSeparator)
	obj, kind, err := s.jobObject(r.Context(), sessionOf(r), operation, resourceGUID)
	if err != nil {
		return err
	}
	state, failure, started := presenter.JobComplete, (*cferror.Error)(nil), (*metav1.Time)(nil)
	if obj != nil {
		state, failure = s.deletionState(obj, kind)
		started = obj.GetDeletionTimestamp()
	}
	writeJSON(w, http.StatusOK, presenter.ForJob(guid, operation, state, started, failure, s.baseURL(r)))
	return nil
}

// jobObject reads the object that a delete job deletes, and names its kind; nil once it is
// gone, and for an applied manifest, whose job is done.
func (s *server) jobObject(ctx context.Context, session *auth.Session, operation, guid string) (conditioned, string, error) {
	switch operation {
	case applyManifestJob:
		return nil, "", nil
	case appDeleteJob:
		return s.deletingApp(ctx, session, guid)
	case orgDeleteJob:
		org := &cfv1alpha1.CFOrg{}
		err := s.live.Get(ctx, client.ObjectKey{Namespace: s.cfg.RootNamespace, Name: guid}, org)
		if apierrors.IsNotFound(err) {
			return nil, orgResource, nil
		}
		return org, orgResource, err
	case spaceDeleteJob:
		spaces := &cfv1alpha1.CFSpaceList{}
		if err := s.live.List(ctx, spaces, client.MatchingFields{membership.NameField: guid}); err != nil || len(spaces.Items) == 0 {
			return nil, spaceResource, err
		}
		return &spaces.Items[0], spaceResource, nil
	}
	return nil, "", cferror.ResourceNotFound(jobResource)
}

// deletionState is the state of the deletion of obj, which still exists: processing while
// it is deleted, failed once that takes longer than DeleteTimeout (with what is in the way: an
// org's or a space's Ready condition says it) or if it is not being deleted at all.
func (s *server) deletionState(obj conditioned, kind string) (string, *cferror.Error) {
	deleted := obj.GetDeletionTimestamp()
	if deleted == nil {
		return presenter.JobFailed, cferror.UnprocessableEntity(fmt.Sprintf("%s %s is not being deleted", kind, obj.GetName()))
	}
	if time.Since(deleted.Time) <= s.cfg.DeleteTimeout {
		return presenter.JobProcessing, nil
	}
	why := "cf-hnc has not finished deleting its namespace"
	switch ready := meta.FindStatusCondition(obj.GetConditions(), cfv1alpha1.ReadyCondition); {
	case kind == appResource:
		why = "its processes, which go first, are not all gone"
	case ready != nil:
		why = ready.Message
	}
	return presenter.JobFailed, cferror.UnprocessableEntity(fmt.Sprintf("%s deletion timed out after %s: %s", kind, s.cfg.DeleteTimeout, why))
}
