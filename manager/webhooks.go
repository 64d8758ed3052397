package manager

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"
)

// admissionDeadline bounds the reads of cf-hnc's validating webhooks: the cache, which blocks
// while it fills when a replica starts, and the apiserver. Past it a validator refuses, saying
// so, within the 10 s that the apiserver gives a validating webhook by default (and the 5 s of
// cf-hnc's mutating ones), instead of holding the request, and a handler goroutine, until the
// apiserver gives up.
const admissionDeadline = 4 * time.Second

// ClientCertificates makes the webhook server require a client certificate that one of the CAs
// in caFile (PEM) signed, on every connection: only the apiserver, which presents one (its
// AdmissionConfiguration names a kubeconfig with a client certificate for the webhook's
// Service), can call the webhooks, not any pod that reaches the port. The file is read once:
// a new CA takes a restart of the manager.
func ClientCertificates(caFile string) (func(*tls.Config), error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("the webhook client CA: %w", err)
	}
	cas := x509.NewCertPool()
	if !cas.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the webhook client CA: no PEM certificate in %s", caFile)
	}
	return func(c *tls.Config) {
		c.ClientCAs = cas
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}, nil
}
