package cfapi

import (
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// getCurrentDroplet is GET /v3/apps/:guid/relationships/current_droplet.
func (s *server) getCurrentDroplet(w http.ResponseWriter, r *http.Request) error {
	app, err := s.findApp(r.Context(), sessionOf(r), r.PathValue("guid"))
	if err != nil {
		return err
	}
	if app.Spec.CurrentDropletRef.Name == "" {
		return cferror.ResourceNotFound(dropletResource)
	}
	writeJSON(w, http.StatusOK, presenter.ForCurrentDroplet(&app.CFApp, s.baseURL(r)))
	return nil
}

// dropletResource is CF's name of a droplet, which is a CFBuild of cf-hnc.
const dropletResource = "Droplet"

// currentDropletRequest is the body of PATCH /v3/apps/:guid/relationships/current_droplet.
type currentDropletRequest struct {
	Data *struct {
		GUID string `json:"guid"`
	} `json:"data"`
}

// setCurrentDroplet is PATCH /v3/apps/:guid/relationships/current_droplet, as the user: the
// droplet is a CFBuild of the app that staged successfully.
func (s *server) setCurrentDroplet(w http.ResponseWriter, r *http.Request) error {
	var req currentDropletRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	session := sessionOf(r)
	app, err := s.findApp(r.Context(), session, r.PathValue("guid"))
	if err != nil {
		return err
	}
	if req.Data == nil || req.Data.GUID == "" {
		return cferror.DropletNotAssignable("the request names no droplet")
	}
	droplet := req.Data.GUID
	build := &cfv1alpha1.CFBuild{}
	err = session.Client.Get(r.Context(), client.ObjectKey{Namespace: app.Namespace, Name: droplet}, build)
	if unreadable(err) {
		return cferror.DropletNotAssignable("the app's space has no droplet " + droplet)
	}
	if err != nil {
		return err
	}
	if why := unassignable(build, app.Name); why != "" {
		return cferror.DropletNotAssignable(why)
	}
	if app.Spec.CurrentDropletRef.Name != droplet {
		patch := client.MergeFrom(app.CFApp.DeepCopy())
		app.Spec.CurrentDropletRef.Name = droplet
		if err := session.Client.Patch(r.Context(), &app.CFApp, patch); err != nil {
			return cferror.FromKubernetes(err, appResource)
		}
	}
	writeJSON(w, http.StatusOK, presenter.ForCurrentDroplet(&app.CFApp, s.baseURL(r)))
	return nil
}

// unassignable says why a build's droplet cannot become the app's current droplet; "" if it can.
func unassignable(build *cfv1alpha1.CFBuild, app string) string {
	switch {
	case build.Spec.AppRef.Name != app:
		return "droplet " + build.Name + " belongs to another app"
	case build.Status.Droplet == nil || !meta.IsStatusConditionTrue(build.Status.Conditions, cfv1alpha1.SucceededCondition):
		return "droplet " + build.Name + " has not staged successfully"
	}
	return ""
}
