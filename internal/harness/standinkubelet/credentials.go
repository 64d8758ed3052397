package standinkubelet

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// keychain holds registry credentials in the order kpack's binaries collect them: the first
// entry that names a registry is the one used for it, and a registry that none names is
// accessed anonymously (kpack's dockercreds.DockerCreds, with a deterministic order).
type keychain []registryAuth

type registryAuth struct {
	// registry is the key as written in the Secret: a host, or a URL of one.
	registry string
	auth     authn.AuthConfig
}

var _ authn.Keychain = keychain(nil)

// Resolve implements authn.Keychain.
func (k keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	for _, entry := range k {
		if registryMatches(entry.registry, r.RegistryStr()) {
			return authn.FromConfig(entry.auth), nil
		}
	}
	return authn.Anonymous, nil
}

// registryMatches reports whether a credentials key names a registry, with the spellings that
// kpack's dockercreds.RegistryMatcher accepts.
func registryMatches(key, registry string) bool {
	if registry == name.DefaultRegistry {
		registry = authn.DefaultAuthKey
	}
	for _, format := range []string{"%s", "https://%s", "http://%s", "https://%s/v1/", "http://%s/v1/", "https://%s/v2/", "http://%s/v2/"} {
		if fmt.Sprintf(format, registry) == key {
			return true
		}
	}
	return false
}

// credentials are the keychains a build pod's steps use.
type credentials struct {
	// serviceAccount holds the Build ServiceAccount's registry Secrets: build-init checks push
	// access with them, and the completion binary reads the app image with them.
	serviceAccount keychain
	// imagePull holds the builder's pull Secrets, which kpack adds for every other registry
	// access of the build and for the rebase.
	imagePull keychain
	// sourcePull holds the registry source's pull Secret, tried first for the source image.
	sourcePull keychain
	// podPull holds the pod's imagePullSecrets: a kubelet pulls the builder image with them.
	podPull keychain
}

// build is the keychain that the lifecycle, build-init and the rebase use.
func (c credentials) build() keychain {
	return slices.Concat(c.serviceAccount, c.imagePull)
}

// source is the keychain with which build-init reads a registry source.
func (c credentials) source() keychain {
	return slices.Concat(c.sourcePull, c.build())
}

// loadCredentials reads the Secrets a pod names, as a kubelet reads them to mount them, and
// its ServiceAccount's imagePullSecrets if the pod has none. A Secret that does not exist is an
// error: a kubelet would not start the pod either.
func loadCredentials(ctx context.Context, reader client.Reader, namespace string, refs secretRefs) (credentials, error) {
	get := func(secretName string) (*corev1.Secret, error) {
		secret := &corev1.Secret{}
		err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: secretName}, secret)
		return secret, err
	}
	dockerConfigs := func(names []string) (keychain, error) {
		var k keychain
		for _, n := range names {
			secret, err := get(n)
			if err != nil {
				return nil, err
			}
			entries, err := dockerConfigEntries(secret)
			if err != nil {
				return nil, fmt.Errorf("secret %s/%s: %w", namespace, n, err)
			}
			k = append(k, entries...)
		}
		return k, nil
	}

	var c credentials
	for _, ref := range refs.basicAuth {
		secret, err := get(ref.secret)
		if err != nil {
			return credentials{}, err
		}
		c.serviceAccount = append(c.serviceAccount, registryAuth{registry: ref.registry, auth: authn.AuthConfig{
			Username: string(secret.Data[corev1.BasicAuthUsernameKey]),
			Password: string(secret.Data[corev1.BasicAuthPasswordKey]),
		}})
	}
	configs, err := dockerConfigs(refs.dockerConfigs)
	if err != nil {
		return credentials{}, err
	}
	c.serviceAccount = append(c.serviceAccount, configs...)
	if c.imagePull, err = dockerConfigs(refs.imagePull); err != nil {
		return credentials{}, err
	}
	if refs.sourcePull != "" {
		if c.sourcePull, err = dockerConfigs([]string{refs.sourcePull}); err != nil {
			return credentials{}, err
		}
	}
	podPull := refs.podPull
	if len(podPull) == 0 && refs.serviceAccount != "" {
		sa := &corev1.ServiceAccount{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: refs.serviceAccount}, sa); err != nil {
			return credentials{}, err
		}
		for _, s := range sa.ImagePullSecrets {
			podPull = append(podPull, s.Name)
		}
	}
	if c.podPull, err = dockerConfigs(podPull); err != nil {
		return credentials{}, err
	}
	return c, nil
}

// dockerConfigEntries reads a Secret the way kpack reads a mounted docker Secret: its
// .dockercfg, then its .dockerconfigjson, whatever the Secret's type.
func dockerConfigEntries(secret *corev1.Secret) (keychain, error) {
	var k keychain
	if data, ok := secret.Data[corev1.DockerConfigKey]; ok {
		var cfg map[string]authn.AuthConfig
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", corev1.DockerConfigKey, err)
		}
		k = append(k, sortedEntries(cfg)...)
	}
	if data, ok := secret.Data[corev1.DockerConfigJsonKey]; ok {
		var cfg struct {
			Auths map[string]authn.AuthConfig `json:"auths"`
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", corev1.DockerConfigJsonKey, err)
		}
		k = append(k, sortedEntries(cfg.Auths)...)
	}
	return k, nil
}

func sortedEntries(auths map[string]authn.AuthConfig) keychain {
	k := make(keychain, 0, len(auths))
	for registry, auth := range auths {
		k = append(k, registryAuth{registry: registry, auth: auth})
	}
	slices.SortFunc(k, func(a, b registryAuth) int { return cmp.Compare(a.registry, b.registry) })
	return k
}
