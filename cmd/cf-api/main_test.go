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
