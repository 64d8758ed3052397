package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/cfapi/auth"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

func TestAuth(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CF API credentials")
}

// clientCert is a certificate and its PKCS#8 key as the cf CLI sends them, PEM, base64.
func clientCert(withKey bool) string {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "alice"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	bundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if withKey {
		pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
		Expect(err).NotTo(HaveOccurred())
		bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})...)
	}
	return base64.StdEncoding.EncodeToString(bundle)
}

var _ = Describe("Parse", func() {
	It("reads a bearer token and a client certificate, whatever the scheme's case", func() {
		for _, header := range []string{"Bearer abc", "bearer abc", "BEARER  abc "} {
			creds, err := auth.Parse(header)
			Expect(err).NotTo(HaveOccurred(), header)
			Expect(creds.ClientCert()).To(BeFalse())
		}
		creds, err := auth.Parse("clientcert " + clientCert(true))
		Expect(err).NotTo(HaveOccurred())
		Expect(creds.ClientCert()).To(BeTrue())
	})

	DescribeTable("tells a missing header from one it cannot read",
		func(header, title string) {
			_, err := auth.Parse(header)
			var cf *cferror.Error
			Expect(errors.As(err, &cf)).To(BeTrue())
			Expect(cf.Title).To(Equal(title))
		},
		Entry("none", "", "CF-NotAuthenticated"),
		Entry("blank", "   ", "CF-NotAuthenticated"),
		Entry("basic", "Basic dXNlcjpwYXNz", "CF-InvalidAuthToken"),
		Entry("a bearer without a token", "Bearer", "CF-InvalidAuthToken"),
		Entry("a client certificate that is not base64", "ClientCert ???", "CF-InvalidAuthToken"),
		Entry("a client certificate without its key", "ClientCert "+clientCert(false), "CF-InvalidAuthToken"),
	)

	It("refuses a client certificate with another certificate's key", func() {
		mine, _ := base64.StdEncoding.DecodeString(clientCert(true))
		theirs, _ := base64.StdEncoding.DecodeString(clientCert(true))
		certOnly, _ := pem.Decode(mine)
		_, rest := pem.Decode(theirs)
		mixed := append(pem.EncodeToMemory(certOnly), rest...)
		_, err := auth.Parse("ClientCert " + base64.StdEncoding.EncodeToString(mixed))
		Expect(err).To(MatchError(ContainSubstring("do not form a pair")))
	})
})
