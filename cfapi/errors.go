package cfapi

import (
	"errors"

	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

// cfErrorOf is the one map of the errors that endpoints return to Cloud Foundry's: the API's
// own (cferror), package cf's typed errors, the apiserver's (for the resource that cf names),
// and UnknownError for any other, whose cause is not shown.
func cfErrorOf(err error) *cferror.Error {
	var (
		answer     *cferror.Error
		notFound   *cf.NotFoundError
		invalid    *cf.UnprocessableError
		nameTaken  *cf.NameTakenError
		noDroplet  *cf.NoDropletError
		assignable *cf.DropletNotAssignableError
		manifest   *cf.InvalidManifestError
		pkg        *cf.InvalidPackageError
		registry   *cf.RegistryError
		resource   *cf.ResourceError
	)
	switch {
	case errors.As(err, &answer):
		return answer
	case errors.As(err, &notFound):
		return cferror.ResourceNotFound(notFound.Resource)
	case errors.As(err, &invalid):
		return cferror.UnprocessableEntity(invalid.Detail)
	case errors.As(err, &nameTaken):
		return cferror.AppNameTaken(nameTaken.Name)
	case errors.As(err, &noDroplet):
		return cferror.NoDroplet()
	case errors.As(err, &assignable):
		return cferror.DropletNotAssignable(assignable.Why)
	case errors.As(err, &manifest):
		return cferror.InvalidManifest(manifest.Why)
	case errors.As(err, &pkg):
		return cferror.AppPackageInvalid(pkg.Why)
	case errors.As(err, &registry):
		return cferror.ServiceUnavailable("The space's registry did not take the package: " + registry.Error())
	case errors.As(err, &resource):
		return fromKubernetes(err, resource.Resource)
	}
	return fromKubernetes(err, "Resource")
}

// fromKubernetes is the Cloud Foundry error of an error of the apiserver, UnknownError for any
// other.
func fromKubernetes(err error, resource string) *cferror.Error {
	var answer *cferror.Error
	if errors.As(cferror.FromKubernetes(err, resource), &answer) {
		return answer
	}
	return cferror.Unknown()
}
