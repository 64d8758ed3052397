// Package auth reads the credentials that the cf CLI sends for a kubeconfig user and acts as
// that user: every request gets a client with the user's own token or client certificate, so
// that Kubernetes' RBAC and admission decide what it may do. Nothing is impersonated; the
// API's own ServiceAccount lends the user no right. Sessions and refusals are remembered by the
// credentials' content, within bounds per user and in all, and credentials not seen lately are
// reviewed at a bounded rate: anybody who reaches the API can send credentials.
package auth
