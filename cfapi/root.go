package cfapi

import (
	"net/http"

	"code.cloudfoundry.org/cf-hnc/cfapi/presenter"
)

// root is GET /, which `cf api` and `cf login` read without credentials.
func (s *server) root(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, presenter.ForRoot(s.baseURL(r)))
	return nil
}

// v3 is GET /v3.
func (s *server) v3(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, presenter.ForV3(s.baseURL(r)))
	return nil
}

// whoami is GET /whoami: the user as the kube-apiserver sees the request's credentials.
func (s *server) whoami(w http.ResponseWriter, r *http.Request) error {
	identity := sessionOf(r).Identity
	writeJSON(w, http.StatusOK, presenter.Whoami{Name: identity.Name, Kind: identity.Kind})
	return nil
}
