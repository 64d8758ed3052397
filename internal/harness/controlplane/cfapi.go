package controlplane

import (
	"context"
	"fmt"
	"slices"
	"time"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// The CF API (cmd/cf-api) runs here as config/cf-api deploys it: the cf-api binary with the
// args of the Deployment's container, as the Deployment's ServiceAccount, through a kubeconfig
// that impersonates it from the admin's credentials. A read its ClusterRole lacks thus fails
// here as in a cluster: the API's cache does not sync and it does not start. Only what cannot
// be the same out of a cluster differs, listed in cfAPIOutOfClusterFlags.

// cfAPIComponent names the CF API's process and its log.
const cfAPIComponent = "cf-api"

// cfAPIOutOfClusterFlags are the cf-api flags whose values the local control plane sets instead
// of the Deployment's.
var cfAPIOutOfClusterFlags = []string{
	"kubeconfig",    // no in-cluster config: the ServiceAccount is impersonated
	"address",       // a loopback address instead of every interface of the pod
	"tls-cert-file", // empty: plain HTTP, which cf-api serves on loopback only; the
	"tls-key-file",  // Secret with the operator's certificate exists only in a cluster
}

// cfAPIStartTimeout covers the API's first read of its cache, which it bounds itself at two
// minutes.
const cfAPIStartTimeout = 150 * time.Second

// StartCFAPI starts the cf-api binary at binary as config/cf-api deploys it (Deploy must have
// applied config/default), listening on address, or on a free loopback port if address is
// empty, and waits until it serves. Start does it for Options.CFAPI.
func (cp *ControlPlane) StartCFAPI(ctx context.Context, binary, address string) error {
	if cp.CFAPIURL() != "" {
		return fmt.Errorf("the CF API is already running at %s", cp.CFAPIURL())
	}
	if cp.deployed == nil {
		return fmt.Errorf("the CF API runs as config/default deploys it: Deploy first")
	}
	container, err := install.APIContainerOf(cp.deployed.objects)
	if err != nil {
		return err
	}
	kubeconfig, err := cp.serviceAccountKubeconfig(install.Namespace, install.APIServiceAccount)
	if err != nil {
		return err
	}
	if address == "" {
		if address, _, err = freeLoopbackAddrs(); err != nil {
			return err
		}
	}
	args, err := install.OverrideArgs(container.Args, map[string]string{
		"kubeconfig":    kubeconfig,
		"address":       address,
		"tls-cert-file": "",
		"tls-key-file":  "",
	}, cfAPIOutOfClusterFlags)
	if err != nil {
		return err
	}
	c, err := startComponent(cfAPIComponent, cp.paths.logDir(), binary, args, nil)
	if err != nil {
		return err
	}
	url := "http://" + address
	// The root document needs no credentials; the API listens once its cache is filled.
	if err := c.waitUntil(ctx, cfAPIStartTimeout, "ready", cp.readyWhen(cfAPIComponent, httpOK(url+"/"))); err != nil {
		c.stop(10 * time.Second)
		return err
	}
	cp.track(c)
	cp.cfAPIURL = url
	return nil
}

// CFAPIURL is the address of the running CF API, for `cf api`; empty when it does not run.
func (cp *ControlPlane) CFAPIURL() string { return cp.cfAPIURL }

// StopCFAPI stops the CF API, if it runs.
func (cp *ControlPlane) StopCFAPI() {
	cp.components = slices.DeleteFunc(cp.components, func(c *component) bool {
		if c.name == cfAPIComponent {
			c.stop(10 * time.Second)
			return true
		}
		return false
	})
	cp.cfAPIURL = ""
}
