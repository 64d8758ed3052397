package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// localCA signs the certificates that the local control plane's own servers and clients
// present to each other where envtest makes none: etcd's, the apiserver's for the kubelet, and,
// with a node, the apiserver's serving certificate for the names pods reach it at.
type localCA struct {
	dir    string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	caFile string
	serial int64
}

// newLocalCA makes a CA called name, with its certificate in dir/ca.crt.
func newLocalCA(dir, name string) (*localCA, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &localCA{dir: dir, cert: cert, key: key, caFile: filepath.Join(dir, "ca.crt"), serial: 1}
	return ca, writePEM(ca.caFile, "CERTIFICATE", der)
}

// certPEM is the CA's certificate, PEM-encoded.
func (ca *localCA) certPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// keyPair is a certificate and its key, as files.
type keyPair struct{ certFile, keyFile string }

// issue signs a certificate for name, a client's if hosts is empty, else a server's for hosts
// (IP addresses or DNS names), and writes it with its key as dir/<file>.crt and dir/<file>.key.
func (ca *localCA) issue(file, name string, hosts ...string) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, err
	}
	ca.serial++
	var ips []net.IP
	var dnsNames []string
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dnsNames = append(dnsNames, h)
		}
	}
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if len(hosts) > 0 {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		IPAddresses:  ips,
		DNSNames:     dnsNames,
	}, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return keyPair{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return keyPair{}, err
	}
	pair := keyPair{certFile: filepath.Join(ca.dir, file+".crt"), keyFile: filepath.Join(ca.dir, file+".key")}
	if err := writePEM(pair.certFile, "CERTIFICATE", der); err != nil {
		return keyPair{}, err
	}
	return pair, writePEM(pair.keyFile, "EC PRIVATE KEY", keyDER)
}

func writePEM(file, blockType string, der []byte) error {
	return os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600)
}
