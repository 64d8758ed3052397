// Command cf-api serves the Cloud Foundry V3 API subset of package cfapi to the cf CLI:
//
//	cf api http://127.0.0.1:9000 && cf auth <kubeconfig user> && cf orgs
//
// It reads the cluster with its own kubeconfig (in a pod, its ServiceAccount), which needs
// only the reads of the ClusterRole cf-hnc:api (config/cf-api/role.yaml); every request acts
// with the caller's own Kubernetes credentials. Beyond loopback it serves HTTPS only, with the
// links the cf CLI follows on --external-url, and a certificate it reads anew when its files
// change.
package main
