package auth

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"

	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

// maxCredentials bounds an Authorization header: a bearer token of an OIDC provider that lists
// many groups, or a certificate and its private key (a 4096-bit RSA pair takes about 7 KiB).
const maxCredentials = 32 << 10

// Credentials are what an Authorization header carries: a bearer token, or a client
// certificate with its private key. Only a hash of them is kept beside them, as the key of the
// session cache: the same credentials, however the header spells them (the scheme's case,
// blanks, line breaks in the base64), have the same key.
type Credentials struct {
	key   [sha256.Size]byte
	token string
	// bundle is a client certificate's PEM bundle, as the header carries it, until checked
	// (decode) into certPEM and keyPEM.
	bundle          []byte
	certPEM, keyPEM []byte
}

// ClientCert says whether the credentials are a certificate and its private key, which must
// not cross a network in clear text.
func (c Credentials) ClientCert() bool { return c.bundle != nil }

// IsClientCert says whether an Authorization header carries a client certificate and its
// private key, without reading them.
func IsClientCert(header string) bool {
	scheme, _, _ := strings.Cut(strings.TrimSpace(header), " ")
	return strings.EqualFold(scheme, "clientcert")
}

// Parse reads an Authorization header as the cf CLI writes it for a Kubernetes user
// (cli:api/shared/wrap_for_cf_on_k8s.go): "Bearer <token>", or "ClientCert <base64 of the PEM
// certificate and PEM private key>". The scheme is case-insensitive. It returns a Cloud
// Foundry error: NotAuthenticated without a header, InvalidAuthToken for one it cannot read.
func Parse(header string) (Credentials, error) {
	creds, err := read(header)
	if err == nil && creds.ClientCert() {
		err = creds.decode()
	}
	return creds, err
}

// read reads an Authorization header as Parse does, but leaves a client certificate unchecked:
// what it costs is bounded by the header's length, whatever the header holds.
func read(header string) (Credentials, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return Credentials{}, cferror.NotAuthenticated()
	}
	if len(header) > maxCredentials {
		return Credentials{}, cferror.InvalidAuthToken(fmt.Sprintf("Invalid Auth Token: the credentials are longer than %d bytes", maxCredentials))
	}
	scheme, value, _ := strings.Cut(header, " ")
	value = strings.TrimSpace(value)
	switch {
	case strings.EqualFold(scheme, "bearer") && value != "":
		return Credentials{key: keyOf("bearer", []byte(value)), token: value}, nil
	case strings.EqualFold(scheme, "clientcert"):
		bundle, err := base64.StdEncoding.DecodeString(value)
		if err != nil {
			return Credentials{}, invalidClientCert("is not base64")
		}
		return Credentials{key: keyOf("clientcert", bundle), bundle: bundle}, nil
	}
	return Credentials{}, cferror.InvalidAuthToken("Invalid Auth Token: expected \"Bearer <token>\" or \"ClientCert <base64 PEM certificate and key>\", " +
		"as the cf CLI sends them for a Kubernetes user")
}

func keyOf(scheme string, value []byte) [sha256.Size]byte {
	return sha256.Sum256(append([]byte(scheme+"\x00"), value...))
}

func invalidClientCert(why string) error {
	return cferror.InvalidAuthToken("Invalid Auth Token: ClientCert " + why)
}

// decode splits the PEM bundle of a ClientCert header into the certificates and the private
// key, and checks that the key belongs to the first certificate.
func (c *Credentials) decode() error {
	var certPEM, keyPEM []byte
	var keys int
	for rest := c.bundle; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		switch {
		case block.Type == "CERTIFICATE":
			certPEM = append(certPEM, pem.EncodeToMemory(block)...)
		case strings.HasSuffix(block.Type, "PRIVATE KEY"):
			keyPEM = pem.EncodeToMemory(block)
			keys++
		}
	}
	if certPEM == nil || keys != 1 {
		return invalidClientCert("needs PEM certificates and exactly one PEM private key")
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return invalidClientCert("certificate and key do not form a pair: " + err.Error())
	}
	c.certPEM, c.keyPEM = certPEM, keyPEM
	return nil
}
