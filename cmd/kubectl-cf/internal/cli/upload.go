package cli

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	kauth "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// spaceKeychain is the registry credentials that the space's builds use: the Secrets that
// cf-hnc resolved for it (status.build.registryCredentials), which HNC copied into the space
// namespace, where a space developer may read them.
func spaceKeychain(ctx context.Context, c client.Client, space *cfv1alpha1.CFSpace) (authn.Keychain, error) {
	var secrets []corev1.Secret
	for _, ref := range space.Status.Build.SecretNames() {
		secret := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: space.Name, Name: ref.Name}, secret); err != nil {
			return nil, fmt.Errorf("reading the space's registry credentials, Secret %s: %w", ref.Name, err)
		}
		secrets = append(secrets, *secret)
	}
	return kauth.NewFromPullSecrets(ctx, secrets)
}

// uploadPackage pushes the packed source to the app's package repository in the space's
// repository (api/v1alpha1.PackageRepository), tagged with the package GUID, and returns its
// reference by digest, which a package names so that its bits cannot change.
func uploadPackage(ctx context.Context, keychain authn.Keychain, source *packedSource, spaceRepository, appGUID, packageGUID string) (string, error) {
	tag, err := name.NewTag(cfv1alpha1.PackageRepository(spaceRepository, appGUID)+":"+packageGUID, name.WeakValidation)
	if err != nil {
		return "", fmt.Errorf("the package repository of the space: %w", err)
	}
	img, err := source.image()
	if err != nil {
		return "", fmt.Errorf("packing the source: %w", err)
	}
	if err := remote.Write(tag, img, remote.WithAuthFromKeychain(keychain), remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("uploading the package to %s: %w", tag, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return tag.Context().Digest(digest.String()).String(), nil
}
