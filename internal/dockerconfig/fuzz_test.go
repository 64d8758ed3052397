package dockerconfig

import (
	"encoding/base64"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
)

// FuzzParse feeds arbitrary Secret contents to the parser that decides whether a space's
// credentials are usable: it must never panic, and what it accepts must be what image
// references can name, with credentials for every registry.
func FuzzParse(f *testing.F) {
	auth := base64.StdEncoding.EncodeToString([]byte("user:secret"))
	for _, seed := range []string{
		`{"auths":{"registry.local":{"auth":"` + auth + `"}}}`,
		`{"auths":{"https://index.docker.io/v1/":{"username":"u","password":"p"}}}`,
		`{"auths":{"127.0.0.1:5000":{"identitytoken":"t"}}}`,
		`{"auths":{"registry.local":{}}}`,
		`{"auths":{"registry.local":{"auth":"bm9jb2xvbg=="}}}`,
		`{"auths":{}}`,
		`{"credsStore":"desktop"}`,
		`{"auths":`,
		`{"auths":{"UPPER.case:99999":{"auth":"` + auth + `"}}}`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		secret := &corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: data}}
		creds, err := Parse(secret)
		if err != nil {
			return
		}
		if len(creds) == 0 {
			t.Fatalf("accepted %q without any registry", data)
		}
		for host, auth := range creds {
			registry, err := name.NewRegistry(host, name.WeakValidation)
			if err != nil || registry.RegistryStr() != host {
				t.Fatalf("accepted registry %q, which an image reference cannot name as such (%v)", host, err)
			}
			if again, err := RegistryHost(host); err != nil || again != host {
				t.Fatalf("registry host %q does not normalise to itself: %q, %v", host, again, err)
			}
			if auth.Username == "" && auth.IdentityToken == "" && auth.RegistryToken == "" {
				t.Fatalf("accepted registry %q without credentials", host)
			}
		}
	})
}
