package cferror

import "fmt"

// AppNameTaken: the space has an app of that name; the cf CLI matches the sentence.
func AppNameTaken(name string) *Error {
	return UnprocessableEntity(fmt.Sprintf("App with the name '%s' already exists.", name))
}

// NoDroplet: an app without a current droplet cannot start; the cf CLI matches the sentence.
func NoDroplet() *Error {
	return UnprocessableEntity("Assign a droplet before starting this app.")
}

// DropletNotAssignable: the droplet to make an app's current one is not a droplet of the app
// that staged successfully.
func DropletNotAssignable(why string) *Error {
	return UnprocessableEntity("Unable to assign current droplet. Ensure the droplet exists and belongs to this app: " + why)
}

// InvalidManifest: an app manifest that cannot be applied, and why.
func InvalidManifest(why string) *Error {
	return UnprocessableEntity("The manifest cannot be applied: " + why)
}
