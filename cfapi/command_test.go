package cfapi_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var _ = Describe("The cf-api command", func() {
	It("serves the API over TLS with its own read-only credentials, and stops cleanly", func(ctx SpecContext) {
		binary, err := gexec.Build("code.cloudfoundry.org/cf-hnc/cmd/cf-api")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
		dir := GinkgoT().TempDir()
		certFile, keyFile, pool := servingCertificate(dir)

		cmd := exec.Command(binary,
			"--kubeconfig="+apiKubeconfig(dir),
			"--address=127.0.0.1:0",
			"--tls-cert-file="+certFile, "--tls-key-file="+keyFile,
			"--root-namespace="+root)
		session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { session.Kill().Wait() })
		serving := regexp.MustCompile(`"address":\s*"(127\.0\.0\.1:\d+)"`)
		Eventually(session.Err, time.Minute).Should(gbytes.Say(`serving the CF API`))
		address := serving.FindSubmatch(session.Err.Contents())
		Expect(address).NotTo(BeNil(), "the log names the address")

		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		get := func(path, authorization string) *http.Response {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+string(address[1])+path, nil)
			Expect(err).NotTo(HaveOccurred())
			if authorization != "" {
				req.Header.Set("Authorization", authorization)
			}
			resp, err := client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(resp.Body.Close)
			return resp
		}
		Expect(get("/", "").StatusCode).To(Equal(http.StatusOK))
		Expect(get("/whoami", clientCertAuthorization(cp.Config)).StatusCode).To(Equal(http.StatusOK))

		session.Terminate()
		Eventually(session, 20*time.Second).Should(gexec.Exit(0))
	})
})

// apiKubeconfig writes a kubeconfig with the API's ServiceAccount token, as a pod's mounted
// token gives it.
func apiKubeconfig(dir string) string {
	GinkgoHelper()
	config := clientcmdapi.NewConfig()
	config.Clusters["local"] = &clientcmdapi.Cluster{Server: cp.Config.Host, CertificateAuthorityData: cp.Config.CAData}
	config.AuthInfos["cf-api"] = &clientcmdapi.AuthInfo{Token: apiConfig.BearerToken}
	config.Contexts["cf-api"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "cf-api"}
	config.CurrentContext = "cf-api"
	path := filepath.Join(dir, "kubeconfig")
	Expect(clientcmd.WriteToFile(*config, path)).To(Succeed())
	return path
}

// servingCertificate writes a self-signed serving certificate for 127.0.0.1 and returns its
// files and a pool that trusts it.
func servingCertificate(dir string) (certFile, keyFile string, pool *x509.CertPool) {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cf-api"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	Expect(os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)).To(Succeed())
	Expect(os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)).To(Succeed())
	cert, err := x509.ParseCertificate(der)
	Expect(err).NotTo(HaveOccurred())
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
