// Package cferror is the Cloud Foundry V3 error body, {"errors":[{"code","title","detail"}]},
// with the codes, titles and texts that the cf CLI matches, and the mapping from the
// kube-apiserver's errors to them.
package cferror
