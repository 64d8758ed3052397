package standinkubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/google/go-containerregistry/pkg/authn"
	kauth "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"github.com/pivotal/kpack/pkg/dockercreds"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Credentials are kpack's own: the binaries in a build pod (build-init, rebase, completion)
// collect them in a dockercreds.DockerCreds, appending Secret after Secret so that the first
// credentials for a registry win, and match registries with dockercreds.RegistryMatcher. A
// kubelet pulls the builder image with the pod's image pull Secrets, matched as the kubelet
// matches them (go-containerregistry's authn/kubernetes).

// credentials are the keychains a build pod's steps use.
type credentials struct {
	// serviceAccount holds the Build ServiceAccount's registry Secrets: build-init checks push
	// access with them, and the completion binary reads the app image with them.
	serviceAccount dockercreds.DockerCreds
	// imagePull holds the builder's pull Secrets, which kpack adds for every other registry
	// access of the build and for the rebase.
	imagePull dockercreds.DockerCreds
	// sourcePull holds the registry source's pull Secret, tried first for the source image.
	sourcePull dockercreds.DockerCreds
	// podPull is the keychain of the pod's imagePullSecrets: a kubelet pulls the builder image
	// with it.
	podPull authn.Keychain
}

// build is the keychain that the lifecycle, build-init and the rebase use: the
// ServiceAccount's credentials, then the builder's pull Secrets for other registries.
func (c credentials) build() dockercreds.DockerCreds {
	creds, _ := maps.Clone(c.serviceAccount).Append(maps.Clone(c.imagePull))
	return creds
}

// source is the keychain with which build-init reads a registry source.
func (c credentials) source() authn.Keychain {
	return authn.NewMultiKeychain(c.sourcePull, c.build())
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
	// dockerConfigs appends the docker configuration of each Secret, as kpack's binaries append
	// each mounted Secret.
	dockerConfigs := func(creds dockercreds.DockerCreds, names []string) (dockercreds.DockerCreds, error) {
		for _, n := range names {
			secret, err := get(n)
			if err != nil {
				return nil, err
			}
			parsed, err := dockerConfigCreds(secret)
			if err != nil {
				return nil, fmt.Errorf("secret %s/%s: %w", namespace, n, err)
			}
			if creds, err = creds.Append(parsed); err != nil {
				return nil, fmt.Errorf("secret %s/%s: %w", namespace, n, err)
			}
		}
		return creds, nil
	}

	var c credentials
	// kpack's binaries start from the basic-auth Secrets (dockercreds.ParseBasicAuthSecrets).
	c.serviceAccount = dockercreds.DockerCreds{}
	for _, ref := range refs.basicAuth {
		secret, err := get(ref.secret)
		if err != nil {
			return credentials{}, err
		}
		c.serviceAccount[ref.registry] = authn.AuthConfig{
			Username: string(secret.Data[corev1.BasicAuthUsernameKey]),
			Password: string(secret.Data[corev1.BasicAuthPasswordKey]),
		}
	}
	var err error
	if c.serviceAccount, err = dockerConfigs(c.serviceAccount, refs.dockerConfigs); err != nil {
		return credentials{}, err
	}
	if c.imagePull, err = dockerConfigs(nil, refs.imagePull); err != nil {
		return credentials{}, err
	}
	if refs.sourcePull != "" {
		if c.sourcePull, err = dockerConfigs(nil, []string{refs.sourcePull}); err != nil {
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
	var pullSecrets []corev1.Secret
	for _, n := range podPull {
		secret, err := get(n)
		if err != nil {
			return credentials{}, err
		}
		pullSecrets = append(pullSecrets, *secret)
	}
	if c.podPull, err = kauth.NewFromPullSecrets(ctx, pullSecrets); err != nil {
		return credentials{}, err
	}
	return c, nil
}

// dockerConfigCreds reads a Secret the way kpack reads a mounted docker Secret
// (dockercreds.ParseDockerConfigSecret): its .dockercfg, then its .dockerconfigjson for the
// registries that .dockercfg does not name, whatever the Secret's type.
func dockerConfigCreds(secret *corev1.Secret) (dockercreds.DockerCreds, error) {
	var cfg dockercreds.DockerCreds
	if data, ok := secret.Data[corev1.DockerConfigKey]; ok {
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", corev1.DockerConfigKey, err)
		}
	}
	var configJSON struct {
		Auths dockercreds.DockerCreds `json:"auths"`
	}
	if data, ok := secret.Data[corev1.DockerConfigJsonKey]; ok {
		if err := json.Unmarshal(data, &configJSON); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", corev1.DockerConfigJsonKey, err)
		}
	}
	return cfg.Append(configJSON.Auths)
}
