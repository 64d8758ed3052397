package main

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
	Entry("HTTPS on every interface", options{address: ":8443", certFile: "tls.crt", keyFile: "tls.key"}, ""),
	Entry("a certificate without its key", options{address: ":8443", certFile: "tls.crt"}, "go together"),
	Entry("an address without a port", options{address: "127.0.0.1"}, "missing port"),
)
