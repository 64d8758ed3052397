package cli

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/sourceimage"
)

// spaceKeychain is the registry credentials that the space's builds use, which a space
// developer may read in the space namespace.
func spaceKeychain(ctx context.Context, c client.Client, space *cfv1alpha1.CFSpace) (authn.Keychain, error) {
	return sourceimage.Keychain(ctx, c, space)
}

// uploadPackage pushes the packed source to the app's package repository, tagged with the
// package GUID, and returns its reference by digest.
func uploadPackage(ctx context.Context, keychain authn.Keychain, source *packedSource, spaceRepository, appGUID, packageGUID string) (string, error) {
	img, err := source.image()
	if err != nil {
		return "", fmt.Errorf("packing the source: %w", err)
	}
	return sourceimage.Push(ctx, keychain, img, spaceRepository, appGUID, packageGUID)
}
