package cfapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/auth"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

// handlerFunc is an endpoint: it writes its answer, or returns the error to answer.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle answers an endpoint's error as the Cloud Foundry error it maps to (cfErrorOf); the
// cause of a server error is logged and not shown. A request's body must come within
// ReadTimeout (boundedBody), and its answer be written within answerTimeout: a client that sends
// or reads slowly cannot hold a connection, and what its request holds, for longer (review 3,
// N8). The server bounds headers and idle connections itself (cmd/cf-api).
func (s *server) handle(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// A writer without deadlines (a test's recorder) has nothing to bound.
		deadlines := http.NewResponseController(w)
		_ = deadlines.SetWriteDeadline(start.Add(s.answerTimeout()))
		if r.Body != nil && r.Body != http.NoBody {
			_ = deadlines.SetReadDeadline(start.Add(s.cfg.ReadTimeout))
			r.Body = &boundedBody{body: r.Body, deadlines: deadlines, timeout: s.cfg.ReadTimeout, start: start}
		}
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

// answerTimeout bounds how long a request may take until its answer is written: the longest
// wait of an endpoint (creating an org or a space waits up to ReadyTimeout for its namespace)
// and a minute to read and answer.
func (s *server) answerTimeout() time.Duration { return s.cfg.ReadyTimeout + time.Minute }

// minUploadRate is the least average rate at which an upload's body must come once ReadTimeout
// has passed: a slow network uploads faster; a client that sends a byte now and then does not.
const minUploadRate = 64 << 10

// boundedBody is a request's body that must come in time: all of it within timeout of the
// request's start; an upload's (uploading) may take as long as a package of up to a GiB takes,
// but each read must bring bytes within timeout, and the body come at minUploadRate on average
// after that. Once the body has come, the connection's read deadline goes: net/http then reads
// ahead on the connection, to notice a client that leaves, and a deadline that passed would
// end the request.
type boundedBody struct {
	body      io.ReadCloser
	deadlines *http.ResponseController
	timeout   time.Duration
	start     time.Time
	read      int64
	upload    bool
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.upload {
		_ = b.deadlines.SetReadDeadline(time.Now().Add(b.timeout))
	}
	n, err := b.body.Read(p)
	b.read += int64(n)
	switch {
	case errors.Is(err, io.EOF):
		_ = b.deadlines.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded) && b.upload:
		return n, cferror.AppBitsUploadInvalid(fmt.Sprintf("no bytes of the upload came for %s", b.timeout))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return n, cferror.MessageTooSlow(fmt.Sprintf("the request's body did not come within %s", b.timeout))
	case b.upload && b.tooSlow():
		return n, cferror.AppBitsUploadInvalid(fmt.Sprintf("the upload came slower than %d KiB/s", minUploadRate>>10))
	}
	return n, err
}

func (b *boundedBody) tooSlow() bool {
	late := time.Since(b.start) - b.timeout
	return late > 0 && float64(b.read) < minUploadRate*late.Seconds()
}

func (b *boundedBody) Close() error { return b.body.Close() }

// uploading lets the request's body take as long as an upload does (boundedBody), and its
// answer as long as converting and pushing the package takes.
func uploading(w http.ResponseWriter, r *http.Request) {
	if body, ok := r.Body.(*boundedBody); ok {
		body.upload = true
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

type sessionKey struct{}

// authenticate gives the endpoint the session of the request's credentials. A client
// certificate carries the user's private key: it is refused over plain HTTP unless the
// connection comes from this host.
func (s *server) authenticate(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		header := r.Header.Get("Authorization")
		if auth.IsClientCert(header) && r.TLS == nil && !fromLoopback(r) {
			return cferror.InvalidAuthToken("Invalid Auth Token: ClientCert credentials carry your private key; " +
				"send them over https only, or log in with a kubeconfig user that has a token")
		}
		session, err := s.auth.Session(r.Context(), header)
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
// MessageParseError, and so is one that does not come in time (boundedBody).
func decodeJSON(r *http.Request, v any) error {
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(v); err != nil {
		var late *cferror.Error
		if errors.As(err, &late) {
			return late
		}
		return cferror.MessageParseError()
	}
	return nil
}
