package cf

import (
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cloud Foundry's names of the resources that errors name.
const (
	OrgResource     = "Organization"
	SpaceResource   = "Space"
	AppResource     = "App"
	ProcessResource = "Process"
	PackageResource = "Package"
	BuildResource   = "Build"
	DropletResource = "Droplet"
	RoleResource    = "Role"
)

// NotFoundError: the resource does not exist, or the user may not see it; the two are not told
// apart, so that existence does not leak.
type NotFoundError struct {
	Resource string
}

func (e *NotFoundError) Error() string { return e.Resource + " not found" }

// IsNotFound says whether err is a NotFoundError.
func IsNotFound(err error) bool {
	var notFound *NotFoundError
	return errors.As(err, &notFound)
}

// UnprocessableError: the request is understood but cannot be done; Detail says why, in Cloud
// Foundry's words where the cf CLI matches them.
type UnprocessableError struct {
	Detail string
}

func (e *UnprocessableError) Error() string { return e.Detail }

func unprocessable(format string, args ...any) error {
	return &UnprocessableError{Detail: fmt.Sprintf(format, args...)}
}

// NameTakenError: the space has an app of that name, as Cloud Foundry compares names.
type NameTakenError struct {
	Resource, Name string
}

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("%s with the name '%s' already exists.", e.Resource, e.Name)
}

// NoDropletError: an app without a current droplet cannot start.
type NoDropletError struct {
	App string
}

func (e *NoDropletError) Error() string { return fmt.Sprintf("app %q has no droplet", e.App) }

// DropletNotAssignableError: what is to become an app's current droplet is no droplet of the app
// that staged successfully; Why says what it is.
type DropletNotAssignableError struct {
	Why string
}

func (e *DropletNotAssignableError) Error() string { return e.Why }

// InvalidManifestError: a manifest that cannot be applied, and why.
type InvalidManifestError struct {
	Why string
}

func (e *InvalidManifestError) Error() string { return "the manifest cannot be applied: " + e.Why }

// InvalidPackageError: uploaded bits that cannot be an app's source (too large, unreadable, or
// with a path outside the app's directory).
type InvalidPackageError struct {
	Why string
}

func (e *InvalidPackageError) Error() string { return e.Why }

// RegistryError: the space's registry did not take or give an image.
type RegistryError struct {
	Err error
}

func (e *RegistryError) Error() string { return e.Err.Error() }
func (e *RegistryError) Unwrap() error { return e.Err }

// NeedsOperatorError: an org or a space cannot become ready until a person acts: its Ready
// condition says why (api/v1alpha1.NeedsOperator).
type NeedsOperatorError struct {
	Ready *metav1.Condition
}

func (e *NeedsOperatorError) Error() string { return "needs an operator: " + e.Ready.Message }

// NotReadyError: an org or a space was not ready after Timeout; Ready is its last Ready
// condition, nil if cf-hnc had reported none.
type NotReadyError struct {
	Timeout time.Duration
	Ready   *metav1.Condition
}

func (e *NotReadyError) Error() string { return fmt.Sprintf("not ready after %s", e.Timeout) }

// NotGoneError: an org or a space was still being deleted after Timeout; Ready is its last
// Ready condition.
type NotGoneError struct {
	Timeout time.Duration
	Ready   *metav1.Condition
}

func (e *NotGoneError) Error() string { return fmt.Sprintf("still being deleted after %s", e.Timeout) }

// ResourceError is an error of the apiserver about a resource of Cloud Foundry's: clients map
// the apiserver's error and name the resource (as in "App not found").
type ResourceError struct {
	Resource string
	Err      error
}

func (e *ResourceError) Error() string { return e.Err.Error() }
func (e *ResourceError) Unwrap() error { return e.Err }

// about names the resource of an apiserver error; other errors, and nil, stay as they are.
func about(resource string, err error) error {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return err
	}
	return &ResourceError{Resource: resource, Err: err}
}

// unreadable says whether an apiserver error of a read as the user means that the object is not
// there for the user: it does not exist, or the user may not read it, which a CF client is not
// told apart.
func unreadable(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsForbidden(err) }
