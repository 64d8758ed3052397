package cferror

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Error is one Cloud Foundry error and the HTTP status it is answered with.
type Error struct {
	Status int `json:"-"`
	// RetryAfter, if set, says when to try again (the Retry-After header).
	RetryAfter time.Duration `json:"-"`
	Code       int           `json:"code"`
	Title      string        `json:"title"`
	Detail     string        `json:"detail"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d): %s", e.Title, e.Code, e.Detail) }

// NotAuthenticated: the request has no credentials.
func NotAuthenticated() *Error {
	return &Error{Status: http.StatusUnauthorized, Code: 10002, Title: "CF-NotAuthenticated", Detail: "Authentication error"}
}

// InvalidAuthToken: the credentials are malformed, or the kube-apiserver does not accept them.
func InvalidAuthToken(detail string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: 1000, Title: "CF-InvalidAuthToken", Detail: detail}
}

// NotAuthorized: Kubernetes' RBAC or admission refused what the user asked for.
func NotAuthorized(detail string) *Error {
	return &Error{Status: http.StatusForbidden, Code: 10003, Title: "CF-NotAuthorized", Detail: detail}
}

// UnknownRequest is the answer to a path or method that the API does not serve: the cf CLI
// reads exactly this detail as "API endpoint not found".
func UnknownRequest() *Error {
	return &Error{Status: http.StatusNotFound, Code: 10000, Title: "CF-NotFound", Detail: "Unknown request"}
}

// ResourceNotFound: the resource does not exist, or the user may not see it (the two are not
// told apart, so that existence does not leak). resource is CF's name of it ("Organization").
func ResourceNotFound(resource string) *Error {
	return &Error{Status: http.StatusNotFound, Code: 10010, Title: "CF-ResourceNotFound", Detail: resource + " not found"}
}

// UnprocessableEntity: the request is well formed but cannot be done.
func UnprocessableEntity(detail string) *Error {
	return &Error{Status: http.StatusUnprocessableEntity, Code: 10008, Title: "CF-UnprocessableEntity", Detail: detail}
}

// BadQueryParameter: a query parameter has a value the endpoint does not accept.
func BadQueryParameter(detail string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: 10005, Title: "CF-BadQueryParameter", Detail: "The query parameter is invalid: " + detail}
}

// MessageParseError: the request body is not the JSON the endpoint reads.
func MessageParseError() *Error {
	return &Error{Status: http.StatusBadRequest, Code: 1001, Title: "CF-MessageParseError", Detail: "Request invalid due to parse error: invalid request body"}
}

// MessageTooSlow: the request's body did not come in time; detail says so.
func MessageTooSlow(detail string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: 1001, Title: "CF-MessageParseError", Detail: "Request invalid due to parse error: " + detail}
}

// ServiceUnavailable: the kube-apiserver did not answer in time; the cf CLI retries GETs.
func ServiceUnavailable(detail string) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: 10015, Title: "CF-ServiceUnavailable", Detail: detail}
}

// RateLimitExceeded: the user asks for more at once, or more often, than the API gives one user
// (or, before authentication, all the credentials it has not seen); retryAfter says when to try
// again.
func RateLimitExceeded(detail string, retryAfter time.Duration) *Error {
	return &Error{Status: http.StatusTooManyRequests, RetryAfter: retryAfter, Code: 10013, Title: "CF-RateLimitExceeded", Detail: detail}
}

// Unknown is any other failure; its cause is logged, not shown.
func Unknown() *Error {
	return &Error{Status: http.StatusInternalServerError, Code: 10001, Title: "UnknownError", Detail: "An unknown error occurred."}
}

// FromKubernetes maps an error of the kube-apiserver to the Cloud Foundry error that the cf
// CLI handles the same way; resource names the resource for "not found". Any other error,
// a Cloud Foundry error among them, is returned as it is.
func FromKubernetes(err error, resource string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsUnauthorized(err):
		return InvalidAuthToken("Invalid Auth Token")
	case apierrors.IsForbidden(err):
		return NotAuthorized("You are not authorized to perform the requested action: " + statusMessage(err))
	case apierrors.IsNotFound(err):
		return ResourceNotFound(resource)
	case apierrors.IsInvalid(err):
		return UnprocessableEntity(invalidDetail(err))
	case apierrors.IsAlreadyExists(err):
		return UnprocessableEntity(resource + " already exists")
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err):
		return ServiceUnavailable(statusMessage(err))
	}
	return err
}

func statusMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

// quotedValue is how an invalid string value precedes the reason in a field error's message
// (`Invalid value: "my-org": Organization 'my-org' already exists.`); the field and value are
// Kubernetes' words for what the reason says to a cf user.
var quotedValue = regexp.MustCompile(`^[A-Za-z ]+: "(?:[^"\\]|\\.)*": `)

// invalidDetail is the reasons of an Invalid error, one per field, without Kubernetes' field
// paths and values: the cf CLI matches CF's sentences ("Organization 'x' already exists.",
// "Name must be unique per organization") in the detail and prints it.
func invalidDetail(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return statusMessage(err)
	}
	var reasons []string
	for _, cause := range status.Status().Details.Causes {
		if cause.Type == metav1.CauseTypeFieldValueInvalid {
			reasons = append(reasons, quotedValue.ReplaceAllString(cause.Message, ""))
		} else {
			reasons = append(reasons, strings.TrimSpace(cause.Field+" "+cause.Message))
		}
	}
	return strings.Join(reasons, "; ")
}

// Write answers a Cloud Foundry error.
func Write(w http.ResponseWriter, cf *Error) {
	w.Header().Set("Content-Type", "application/json")
	if cf.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(cf.RetryAfter.Round(time.Second)/time.Second)))
	}
	w.WriteHeader(cf.Status)
	_ = json.NewEncoder(w).Encode(struct {
		Errors []*Error `json:"errors"`
	}{[]*Error{cf}})
}
