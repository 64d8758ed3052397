package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/cfapi"
)

func TestCFAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "cf-api")
}

var _ = DescribeTable("how the API may be served",
	func(o options, refused string) {
		err := o.checkTransport()
		if refused == "" {
			Expect(err).NotTo(HaveOccurred())
		} else {
			Expect(err).To(MatchError(ContainSubstring(refused)))
		}
	},
	Entry("plain HTTP on loopback", options{address: "127.0.0.1:9000"}, ""),
	Entry("plain HTTP on localhost", options{address: "localhost:9000"}, ""),
	Entry("plain HTTP on IPv6 loopback", options{address: "[::1]:9000"}, ""),
	Entry("plain HTTP on every interface", options{address: ":8443"}, "serve HTTPS there"),
	Entry("plain HTTP on a pod's address", options{address: "10.0.0.7:8443"}, "serve HTTPS there"),
	Entry("HTTPS on every interface", options{address: ":8443", certFile: "tls.crt", keyFile: "tls.key", externalURL: "https://api.cf.example.com"}, ""),
	Entry("HTTPS on every interface, with links from each request's Host", options{address: ":8443", certFile: "tls.crt", keyFile: "tls.key"},
		"give the API's URL as the cf CLI reaches it with --external-url"),
	Entry("a certificate without its key", options{address: ":8443", certFile: "tls.crt"}, "go together"),
	Entry("an address without a port", options{address: "127.0.0.1"}, "missing port"),
)

var _ = DescribeTable("the scratch space of uploads",
	func(flag string, bytes int64, refused string) {
		var size byteSize
		err := size.Set(flag)
		if refused != "" {
			Expect(err).To(MatchError(ContainSubstring(refused)))
			return
		}
		Expect(err).NotTo(HaveOccurred())
		Expect(int64(size)).To(Equal(bytes))
	},
	Entry("a quantity", "1Gi", int64(1<<30), ""),
	Entry("a decimal quantity", "500M", int64(500_000_000), ""),
	Entry("a number of bytes", "1048576", int64(1<<20), ""),
	Entry("nothing", "0", int64(0), "must hold some bytes"),
	Entry("not a size", "lots", int64(0), "not a size"),
)

var _ = DescribeTable("the bounds of what the API serves at once",
	func(change func(*options), refused string) {
		o := options{idleTimeout: time.Minute, api: cfapi.Config{MaxLists: 1, MaxUploads: 1, ReadTimeout: time.Second}}
		o.api.Reviews.PerSecond, o.api.Reviews.Burst = 1, 1
		change(&o)
		if refused == "" {
			Expect(o.checkLimits()).To(Succeed())
		} else {
			Expect(o.checkLimits()).To(MatchError(ContainSubstring(refused)))
		}
	},
	Entry("the least that lets requests through", func(*options) {}, ""),
	Entry("no list at a time", func(o *options) { o.api.MaxLists = 0 }, "--max-lists"),
	Entry("no upload at a time", func(o *options) { o.api.MaxUploads = 0 }, "--max-uploads"),
	Entry("no review", func(o *options) { o.api.Reviews.PerSecond = 0 }, "--credential-reviews-per-second"),
	Entry("no burst of reviews", func(o *options) { o.api.Reviews.Burst = 0 }, "--credential-review-burst"),
	Entry("no idle time", func(o *options) { o.idleTimeout = 0 }, "--idle-timeout"),
)

// served serves a handler that answers "ok" with o on a loopback port until the spec ends, and
// returns its address.
func served(o options) string {
	GinkgoHelper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- o.serve(ctx, listener, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	}()
	DeferCleanup(func() {
		stop()
		Eventually(done).Should(Receive(BeNil()))
	})
	return listener.Addr().String()
}

var _ = Describe("serving connections", func() {
	It("closes a connection that stays idle after a request, rather than keeping it open for ever", func() {
		address := served(options{idleTimeout: time.Second})
		conn, err := net.Dial("tcp", address)
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		reader := bufio.NewReader(conn)
		_, err = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n")
		Expect(err).NotTo(HaveOccurred())
		answer, err := http.ReadResponse(reader, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(io.ReadAll(answer.Body)).To(Equal([]byte("ok")))

		Expect(conn.SetReadDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
		start := time.Now()
		_, err = reader.ReadByte()
		Expect(err).To(MatchError(io.EOF), "the server closed the idle connection")
		Expect(time.Since(start)).To(BeNumerically("<", 3*time.Second))
	})

	It("serves the certificate of the files as they are now, when a renewal replaces them", func() {
		dir := GinkgoT().TempDir()
		certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		writeCertificate(dir, certFile, keyFile, 1)
		address := served(options{idleTimeout: time.Minute, certFile: certFile, keyFile: keyFile})
		Expect(servedSerial(address)).To(Equal(int64(1)))

		writeCertificate(dir, certFile, keyFile, 2)
		Eventually(func() int64 { return servedSerial(address) }, 30*time.Second, 250*time.Millisecond).Should(Equal(int64(2)))
	})
})

// writeCertificate writes a self-signed certificate with a serial number and its key, replacing
// the files at once as the kubelet updates a Secret's volume.
func writeCertificate(dir, certFile, keyFile string, serial int64) {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "api.cf.example.com"},
		DNSNames: []string{"api.cf.example.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "PRIVATE KEY", Bytes: pkcs8}} {
		next := filepath.Join(dir, ".next")
		Expect(os.WriteFile(next, pem.EncodeToMemory(block), 0o600)).To(Succeed())
		Expect(os.Rename(next, file)).To(Succeed())
	}
}

// servedSerial is the serial number of the certificate that a new TLS connection is served.
func servedSerial(address string) int64 {
	GinkgoHelper()
	conn, err := tls.Dial("tcp", address, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the spec reads the certificate itself
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	certificates := conn.ConnectionState().PeerCertificates
	Expect(certificates).NotTo(BeEmpty())
	return certificates[0].SerialNumber.Int64()
}
