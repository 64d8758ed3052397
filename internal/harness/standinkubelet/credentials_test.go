package standinkubelet

import (
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/pivotal/kpack/pkg/dockercreds"
	corev1 "k8s.io/api/core/v1"
)

var _ = Describe("credentials", func() {
	// resolve returns the "user:password" a keychain gives for an image reference.
	resolve := func(k authn.Keychain, ref string) string {
		parsed, err := name.ParseReference(ref)
		Expect(err).NotTo(HaveOccurred())
		auth, err := k.Resolve(parsed.Context())
		Expect(err).NotTo(HaveOccurred())
		cfg, err := auth.Authorization()
		Expect(err).NotTo(HaveOccurred())
		return cfg.Username + ":" + cfg.Password
	}

	DescribeTable("match a registry spelled the ways kpack accepts",
		func(key string, matches bool) {
			creds := dockercreds.DockerCreds{key: authn.AuthConfig{Username: "u", Password: "p"}}
			Expect(resolve(creds, "127.0.0.1:5000/apps/app") == "u:p").To(Equal(matches))
		},
		Entry("host", "127.0.0.1:5000", true),
		Entry("https URL", "https://127.0.0.1:5000", true),
		Entry("http URL with /v2/", "http://127.0.0.1:5000/v2/", true),
		Entry("https URL with /v1/", "https://127.0.0.1:5000/v1/", true),
		Entry("another port", "127.0.0.1:5001", false),
		Entry("a URL with a path", "https://127.0.0.1:5000/apps", false),
	)

	It("read dockercfg before dockerconfigjson: the first entry for a registry wins", func() {
		secret := &corev1.Secret{Data: map[string][]byte{
			corev1.DockerConfigJsonKey: []byte(`{"auths":{"127.0.0.1:5000":{"username":"json","password":"j"},"127.0.0.1:6000":{"auth":"dXNlcjpzZWNyZXQ="}}}`),
			corev1.DockerConfigKey:     []byte(`{"https://127.0.0.1:5000":{"username":"cfg","password":"c"}}`),
		}}

		creds, err := dockerConfigCreds(secret)

		Expect(err).NotTo(HaveOccurred())
		Expect(resolve(creds, "127.0.0.1:5000/apps/app")).To(Equal("cfg:c"))
		Expect(resolve(creds, "127.0.0.1:6000/apps/app")).To(Equal("user:secret"))
		Expect(resolve(creds, "127.0.0.1:7000/apps/app")).To(Equal(":"), "anonymous")
	})

	It("fail on a Secret that is not docker configuration", func() {
		_, err := dockerConfigCreds(&corev1.Secret{Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte("{")}})
		Expect(err).To(MatchError(ContainSubstring(corev1.DockerConfigJsonKey)))
	})

	It("try the source pull Secret first for the source, and add the builder's pull Secrets", func() {
		entry := func(user string) dockercreds.DockerCreds {
			return dockercreds.DockerCreds{"127.0.0.1:5000": authn.AuthConfig{Username: user}}
		}
		c := credentials{
			serviceAccount: entry("sa"),
			imagePull:      dockercreds.DockerCreds{"127.0.0.1:5000": {Username: "pull"}, "127.0.0.1:6000": {Username: "pull"}},
			sourcePull:     entry("source"),
		}

		Expect(resolve(c.source(), "127.0.0.1:5000/x")).To(Equal("source:"))
		Expect(resolve(c.build(), "127.0.0.1:5000/x")).To(Equal("sa:"))
		Expect(resolve(c.build(), "127.0.0.1:6000/x")).To(Equal("pull:"))
		Expect(resolve(c.serviceAccount, "127.0.0.1:6000/x")).To(Equal(":"), "build() leaves the ServiceAccount's credentials as they are")
	})
})
