package auth

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"strings"

	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

// Credentials are what an Authorization header carries: a bearer token, or a client
// certificate with its private key. Only a hash of the header is kept beside them, as the key
// of the session cache.
type Credentials struct {
	key     [sha256.Size]byte
	token   string
	certPEM []byte
	keyPEM  []byte
}

// ClientCert says whether the credentials are a certificate and its private key, which must
// not cross a network in clear text.
func (c Credentials) ClientCert() bool { return c.certPEM != nil }

// Parse reads an Authorization header as the cf CLI writes it for a Kubernetes user
// (cli:api/shared/wrap_for_cf_on_k8s.go): "Bearer <token>", or "ClientCert <base64 of the PEM
// certificate and PEM private key>". The scheme is case-insensitive. It returns a Cloud
// Foundry error: NotAuthenticated without a header, InvalidAuthToken for one it cannot read.
func Parse(header string) (Credentials, error) {
	if strings.TrimSpace(header) == "" {
		return Credentials{}, cferror.NotAuthenticated()
	}
	scheme, value, _ := strings.Cut(strings.TrimSpace(header), " ")
	value = strings.TrimSpace(value)
	creds := Credentials{key: sha256.Sum256([]byte(header))}
	switch {
	case strings.EqualFold(scheme, "bearer") && value != "":
		creds.token = value
		return creds, nil
	case strings.EqualFold(scheme, "clientcert"):
		cert, key, err := decodeClientCert(value)
		if err != nil {
			return Credentials{}, err
		}
		creds.certPEM, creds.keyPEM = cert, key
		return creds, nil
	}
	return Credentials{}, cferror.InvalidAuthToken("Invalid Auth Token: expected \"Bearer <token>\" or \"ClientCert <base64 PEM certificate and key>\", " +
		"as the cf CLI sends them for a Kubernetes user")
}

// decodeClientCert splits the PEM bundle of a ClientCert header into the certificates and the
// private key, and checks that the key belongs to the first certificate.
func decodeClientCert(value string) (certPEM, keyPEM []byte, err error) {
	invalid := func(why string) error { return cferror.InvalidAuthToken("Invalid Auth Token: ClientCert " + why) }
	bundle, decodeErr := base64.StdEncoding.DecodeString(value)
	if decodeErr != nil {
		return nil, nil, invalid("is not base64")
	}
	var keys int
	for rest := bundle; ; {
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
		return nil, nil, invalid("needs PEM certificates and exactly one PEM private key")
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, nil, invalid("certificate and key do not form a pair: " + err.Error())
	}
	return certPEM, keyPEM, nil
}
