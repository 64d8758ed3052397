package cfapi

import (
	"context"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/auth"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// startApp is POST /v3/apps/:guid/actions/start.
func (s *server) startApp(w http.ResponseWriter, r *http.Request) error {
	return s.changeState(w, r, cfv1alpha1.StartedState, false)
}

// stopApp is POST /v3/apps/:guid/actions/stop.
func (s *server) stopApp(w http.ResponseWriter, r *http.Request) error {
	return s.changeState(w, r, cfv1alpha1.StoppedState, false)
}

// restartApp is POST /v3/apps/:guid/actions/restart.
func (s *server) restartApp(w http.ResponseWriter, r *http.Request) error {
	return s.changeState(w, r, cfv1alpha1.StartedState, true)
}

// changeState sets the app's desired state, as the user. An app starts only with a current
// droplet. Starting a stopped app and restarting an app replace the instances of its processes
// that run its current droplet already: cf restart and cf restage stop the app and start it
// again, and cf-hnc may see only the start, with the instances still running. They are marked
// before the app is started, so that cf-hnc does not start them twice. Instances still to be
// moved to the current droplet are replaced by that move. Either way processStats reports the
// instances made before the start as starting, from what this request wrote, however late
// cf-hnc's status is. Starting a started app changes nothing, as in CF.
func (s *server) changeState(w http.ResponseWriter, r *http.Request, state cfv1alpha1.DesiredState, restart bool) error {
	session := sessionOf(r)
	app, err := s.findApp(r.Context(), session, r.PathValue("guid"))
	if err != nil {
		return err
	}
	if state == cfv1alpha1.StartedState && app.Spec.CurrentDropletRef.Name == "" {
		return cferror.NoDroplet()
	}
	if state == cfv1alpha1.StartedState && (restart || app.Spec.DesiredState != state) {
		if err := restartProcesses(r.Context(), session, &app.CFApp); err != nil {
			return err
		}
	}
	if app.Spec.DesiredState != state {
		patch := client.MergeFrom(app.CFApp.DeepCopy())
		app.Spec.DesiredState = state
		if err := session.Client.Patch(r.Context(), &app.CFApp, patch); err != nil {
			return cferror.FromKubernetes(err, appResource)
		}
	}
	writeJSON(w, http.StatusOK, presenter.ForApp(&app.CFApp, s.baseURL(r)))
	return nil
}

// restartProcesses asks cf-hnc to replace, one at a time, the instances of the app's processes
// that run its current droplet, by annotating them with the time of the start. A process that
// cf-hnc has stopped starts its instances from the annotated template: nothing is replaced.
func restartProcesses(ctx context.Context, session *auth.Session, app *cfv1alpha1.CFApp) error {
	processes, err := processesOf(ctx, session, app)
	if err != nil {
		return err
	}
	at := time.Now().UTC().Format(time.RFC3339Nano)
	for i := range processes {
		p := &processes[i]
		if p.Status.Droplet != app.Spec.CurrentDropletRef.Name {
			continue
		}
		patch := client.MergeFrom(p.DeepCopy())
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, cfv1alpha1.AppStartedAtAnnotation, at)
		if err := session.Client.Patch(ctx, p, patch); err != nil {
			return cferror.FromKubernetes(err, processResource)
		}
	}
	return nil
}
