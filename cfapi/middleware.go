package cfapi

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/auth"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

// handlerFunc is an endpoint: it writes its answer, or returns the error to answer.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle answers an endpoint's error as the Cloud Foundry error it maps to (cfErrorOf); the
// cause of a server error is logged and not shown.
func (s *server) handle(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		status := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		if err := h(status, r); err != nil {
			answer := cfErrorOf(err)
			if answer.Status >= http.StatusInternalServerError {
				s.cfg.Log.Error(err, "request failed", "method", r.Method, "path", r.URL.Path)
			}
			cferror.Write(status, answer)
		}
		s.cfg.Log.V(1).Info("request", "method", r.Method, "path", r.URL.Path, "status", status.status, "duration", time.Since(start))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

type sessionKey struct{}

// authenticate gives the endpoint the session of the request's credentials. A client
// certificate carries the user's private key: it is refused over plain HTTP unless the
// connection comes from this host.
func (s *server) authenticate(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		creds, err := auth.Parse(r.Header.Get("Authorization"))
		if err != nil {
			return err
		}
		if creds.ClientCert() && r.TLS == nil && !fromLoopback(r) {
			return cferror.InvalidAuthToken("Invalid Auth Token: ClientCert credentials carry your private key; " +
				"send them over https only, or log in with a kubeconfig user that has a token")
		}
		session, err := s.auth.Session(r.Context(), creds)
		if err != nil {
			return err
		}
		return h(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, session)))
	}
}

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func sessionOf(r *http.Request) *auth.Session { return r.Context().Value(sessionKey{}).(*auth.Session) }

// userOf is the user of the request's session, for package cf.
func userOf(r *http.Request) cf.User { return sessionOf(r).User() }

// baseURL is the API's address for the links of an answer.
func (s *server) baseURL(r *http.Request) *url.URL {
	if s.cfg.ExternalURL != nil {
		return s.cfg.ExternalURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return &url.URL{Scheme: scheme, Host: r.Host}
}

// warn adds a warning to the answer, which the cf CLI prints (X-Cf-Warnings).
func warn(w http.ResponseWriter, warning string) {
	w.Header().Add("X-Cf-Warnings", url.QueryEscape(warning))
}

// writeJSON answers body; an error writing it means that the client has gone.
func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// maxBody bounds the JSON bodies the API reads.
const maxBody = 1 << 20

// decodeJSON reads a request body into v; a body that is not such JSON is CF's
// MessageParseError.
func decodeJSON(r *http.Request, v any) error {
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(v); err != nil {
		return cferror.MessageParseError()
	}
	return nil
}
