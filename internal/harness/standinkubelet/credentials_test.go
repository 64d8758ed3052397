package standinkubelet

import (
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

var _ = Describe("keychain", func() {
	// resolve returns the "user:password" a keychain gives for an image reference.
	resolve := func(k keychain, ref string) string {
		parsed, err := name.ParseReference(ref)
		Expect(err).NotTo(HaveOccurred())
		auth, err := k.Resolve(parsed.Context())
		Expect(err).NotTo(HaveOccurred())
		cfg, err := auth.Authorization()
		Expect(err).NotTo(HaveOccurred())
		return cfg.Username + ":" + cfg.Password
	}

	DescribeTable("matches a registry spelled the ways kpack accepts",
		func(key string, matches bool) {
			Expect(registryMatches(key, "127.0.0.1:5000")).To(Equal(matches))
		},
		Entry("host", "127.0.0.1:5000", true),
		Entry("https URL", "https://127.0.0.1:5000", true),
		Entry("http URL with /v2/", "http://127.0.0.1:5000/v2/", true),
		Entry("https URL with /v1/", "https://127.0.0.1:5000/v1/", true),
		Entry("another port", "127.0.0.1:5001", false),
		Entry("a URL with a path", "https://127.0.0.1:5000/apps", false),
	)

	It("reads dockercfg before dockerconfigjson, and the first entry for a registry wins", func() {
		secret := &corev1.Secret{Data: map[string][]byte{
			corev1.DockerConfigJsonKey: []byte(`{"auths":{"127.0.0.1:5000":{"username":"json","password":"j"},"127.0.0.1:6000":{"auth":"dXNlcjpzZWNyZXQ="}}}`),
			corev1.DockerConfigKey:     []byte(`{"https://127.0.0.1:5000":{"username":"cfg","password":"c"}}`),
		}}

		k, err := dockerConfigEntries(secret)

		Expect(err).NotTo(HaveOccurred())
		Expect(resolve(k, "127.0.0.1:5000/apps/app")).To(Equal("cfg:c"))
		Expect(resolve(k, "127.0.0.1:6000/apps/app")).To(Equal("user:secret"))
		Expect(resolve(k, "127.0.0.1:7000/apps/app")).To(Equal(":"), "anonymous")
	})

	It("fails on a Secret that is not docker configuration", func() {
		_, err := dockerConfigEntries(&corev1.Secret{Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte("{")}})
		Expect(err).To(MatchError(ContainSubstring(corev1.DockerConfigJsonKey)))
	})

	It("tries the source pull Secret first for the source, and adds the builder's pull Secrets", func() {
		entry := func(user string) registryAuth {
			return registryAuth{registry: "127.0.0.1:5000", auth: authn.AuthConfig{Username: user}}
		}
		c := credentials{serviceAccount: keychain{entry("sa")}, imagePull: keychain{entry("pull"), {registry: "127.0.0.1:6000", auth: authn.AuthConfig{Username: "pull"}}}, sourcePull: keychain{entry("source")}}

		Expect(resolve(c.source(), "127.0.0.1:5000/x")).To(Equal("source:"))
		Expect(resolve(c.build(), "127.0.0.1:5000/x")).To(Equal("sa:"))
		Expect(resolve(c.build(), "127.0.0.1:6000/x")).To(Equal("pull:"))
		Expect(resolve(c.serviceAccount, "127.0.0.1:6000/x")).To(Equal(":"))
	})
})
