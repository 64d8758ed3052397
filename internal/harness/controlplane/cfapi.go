package controlplane

import (
	"context"

	"code.cloudfoundry.org/cf-hnc/internal/install"
)

// The CF API runs as config/cf-api deploys it: two pods behind the Service cf-hnc-api, serving
// HTTPS with the certificate of the Secret cf-hnc-api-tls (ensureAPICertificate), forwarded to a
// loopback port (forward.go).

// cfAPIPort is the name of the CF API Service's port.
const cfAPIPort = "https"

// exposeCFAPI forwards Options.CFAPIAddress (or a free loopback port) to the CF API Service.
func (cp *ControlPlane) exposeCFAPI(ctx context.Context) error {
	f, err := cp.forwardService(ctx, install.Namespace, install.APIDeployment, cfAPIPort, cp.opts.CFAPIAddress)
	if err != nil {
		return err
	}
	cp.cfAPIForward = f
	return nil
}

// CFAPIURL is the address of the CF API, for `cf api`; empty when it does not run.
func (cp *ControlPlane) CFAPIURL() string {
	if cp.cfAPIForward == nil {
		return ""
	}
	return "https://" + cp.cfAPIForward.address()
}

// CFAPICA is the file of the CA that signed the CF API's certificate, for a client of CFAPIURL
// (`SSL_CERT_FILE=<file> cf api ...`).
func (cp *ControlPlane) CFAPICA() string { return cp.cfAPICA }
