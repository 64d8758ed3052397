package cferror

import "net/http"

// AppPackageInvalid: the uploaded zip cannot be an app's source (too large, unreadable, or with
// a path outside the app's directory), as Cloud Controller says it.
func AppPackageInvalid(why string) *Error {
	return &Error{Status: http.StatusUnprocessableEntity, Code: 150001, Title: "CF-AppPackageInvalid", Detail: "The app package is invalid: " + why}
}

// AppBitsUploadInvalid: the upload is not the multipart form that the cf CLI sends.
func AppBitsUploadInvalid(why string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: 160001, Title: "CF-AppBitsUploadInvalid", Detail: "The app upload is invalid: " + why}
}
