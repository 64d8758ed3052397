package cf

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// NewPackage is a bits package of the app named guid (a new GUID if it is empty), owned by the
// app, holding the source image of registry if it is set.
func NewPackage(app *cfv1alpha1.CFApp, guid string, registry cfv1alpha1.Registry) *cfv1alpha1.CFPackage {
	return &cfv1alpha1.CFPackage{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: newGUID(guid), OwnerReferences: cfv1alpha1.OwnedByApp(app)},
		Spec: cfv1alpha1.CFPackageSpec{
			Type:   cfv1alpha1.BitsPackage,
			AppRef: corev1.LocalObjectReference{Name: app.Name},
			Source: cfv1alpha1.PackageSource{Registry: registry},
		},
	}
}

// CreatePackage creates a package of the app as the user, without bits until they are
// uploaded (UploadPackage).
func CreatePackage(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp) (*cfv1alpha1.CFPackage, error) {
	pkg := NewPackage(app, "", cfv1alpha1.Registry{})
	return pkg, about(PackageResource, c.Create(ctx, pkg))
}

// PackagesIn calls visit with the packages of the spaces, as the user lists them a chunk at a
// time (eachIn); a space where the user may not list them is left out.
func PackagesIn(ctx context.Context, c client.Client, spaces []string, visit func(*cfv1alpha1.CFPackage)) error {
	return about(PackageResource, eachIn(ctx, c, spaces, func() *cfv1alpha1.CFPackageList { return &cfv1alpha1.CFPackageList{} },
		func(l *cfv1alpha1.CFPackageList) []cfv1alpha1.CFPackage { return l.Items }, visit))
}

// PushSource pushes the source layer that layer writes, as the image of package packageGUID of
// an app, to the app's package repository in the space's, with the registry credentials that
// the space's builds use, which the user reads. It returns the image by digest and the Secrets
// to pull it with, as a package names them. A space without a registry cannot keep packages:
// layer is called, to write the layer to a file and name it, only once the space can.
func PushSource(ctx context.Context, c client.Client, space *cfv1alpha1.CFSpace, appGUID, packageGUID string, layer func() (string, error)) (cfv1alpha1.Registry, error) {
	build := space.Status.Build
	if build == nil || build.DropletRepositoryPrefix == "" || len(build.RegistryCredentials) == 0 {
		return cfv1alpha1.Registry{}, unprocessable("Space %q has no registry to keep packages in yet (%s); an operator places it with kubectl cf set-registry",
			space.Spec.DisplayName, BuildReadiness(space))
	}
	keychain, err := SpaceKeychain(ctx, c, space)
	if err != nil {
		return cfv1alpha1.Registry{}, about("Secret", err)
	}
	layerFile, err := layer()
	if err != nil {
		return cfv1alpha1.Registry{}, err
	}
	img, err := SourceImage(layerFile)
	if err != nil {
		return cfv1alpha1.Registry{}, fmt.Errorf("packing the source: %w", err)
	}
	ref, err := PushPackage(ctx, keychain, img, build.DropletRepositoryPrefix, appGUID, packageGUID)
	if err != nil {
		return cfv1alpha1.Registry{}, &RegistryError{Err: err}
	}
	return cfv1alpha1.Registry{Image: ref, ImagePullSecrets: build.SecretNames()}, nil
}

// UploadPackage pushes the source layer that layer writes as the bits of a package that has
// none yet (PushSource), and names the image in the package, as the user: the package is
// uploaded (READY) when it returns.
func UploadPackage(ctx context.Context, c client.Client, space *cfv1alpha1.CFSpace, pkg *cfv1alpha1.CFPackage, layer func() (string, error)) error {
	if pkg.Uploaded() {
		return unprocessable("Package %s has its bits already: create a new package to upload again", pkg.Name)
	}
	registry, err := PushSource(ctx, c, space, pkg.Spec.AppRef.Name, pkg.Name, layer)
	if err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(pkg.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pkg.Spec.Source.Registry = registry
	err = c.Patch(ctx, pkg, patch)
	if apierrors.IsConflict(err) {
		return unprocessable("Package %s changed while its bits were uploaded: create a new package to upload again", pkg.Name)
	}
	return about(PackageResource, err)
}

// NewestPackage is the app's newest uploaded package, which Cloud Foundry stages on a restage,
// read as the user; nil if it has none.
func NewestPackage(ctx context.Context, c client.Client, app *cfv1alpha1.CFApp) (*cfv1alpha1.CFPackage, error) {
	list := &cfv1alpha1.CFPackageList{}
	if err := c.List(ctx, list, client.InNamespace(app.Namespace)); err != nil {
		return nil, fmt.Errorf("listing packages: %w", about(PackageResource, err))
	}
	uploaded := slices.DeleteFunc(list.Items, func(p cfv1alpha1.CFPackage) bool {
		return p.Spec.AppRef.Name != app.Name || !p.Uploaded() || !p.DeletionTimestamp.IsZero()
	})
	if len(uploaded) == 0 {
		return nil, nil
	}
	newest := slices.MaxFunc(uploaded, func(a, b cfv1alpha1.CFPackage) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	return &newest, nil
}
