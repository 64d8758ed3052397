// Package dockerconfig reads the registry credentials of kubernetes.io/dockerconfigjson
// Secrets, to check them before builds use them.
package dockerconfig

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
)

// Credentials maps registry hosts, as image references name them, to credentials.
type Credentials map[string]authn.AuthConfig

// Parse reads a credential Secret, or says why it is not usable.
func Parse(secret *corev1.Secret) (Credentials, error) {
	if secret.Type != corev1.SecretTypeDockerConfigJson {
		return nil, fmt.Errorf("type is %q, not %s", secret.Type, corev1.SecretTypeDockerConfigJson)
	}
	var config struct {
		Auths map[string]authn.AuthConfig `json:"auths"`
	}
	if err := json.Unmarshal(secret.Data[corev1.DockerConfigJsonKey], &config); err != nil {
		return nil, fmt.Errorf("%s is not a docker config: %v", corev1.DockerConfigJsonKey, err)
	}
	if len(config.Auths) == 0 {
		return nil, fmt.Errorf("%s has no registries under \"auths\"", corev1.DockerConfigJsonKey)
	}
	creds := Credentials{}
	for key, auth := range config.Auths {
		host, err := RegistryHost(key)
		if err != nil {
			return nil, fmt.Errorf("registry %q: %v", key, err)
		}
		// authn.AuthConfig decodes "auth" into Username and Password, and rejects a bad one.
		if auth.Username == "" && auth.IdentityToken == "" && auth.RegistryToken == "" {
			return nil, fmt.Errorf("registry %q: no credentials (auth, username or identitytoken)", key)
		}
		creds[host] = auth
	}
	return creds, nil
}

// RegistryHost normalises a docker config key ("https://index.docker.io/v1/", "host:port") to
// the registry host as image references name it.
func RegistryHost(key string) (string, error) {
	host := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ = strings.Cut(host, "/")
	registry, err := name.NewRegistry(host, name.WeakValidation)
	if err != nil {
		return "", err
	}
	return registry.RegistryStr(), nil
}
