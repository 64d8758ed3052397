package cf

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// A build's state, and whether it staged a droplet, are the API's rules (CFBuild.State,
// CFBuild.StagedDroplet).

// NewBuild is a build of a package of the app, named with a new GUID, owned by the app. It
// names no lifecycle data: it stages with the app's lifecycle, as a Cloud Foundry build does.
func NewBuild(app *cfv1alpha1.CFApp, pkg string) *cfv1alpha1.CFBuild {
	return &cfv1alpha1.CFBuild{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: newGUID(""), OwnerReferences: cfv1alpha1.OwnedByApp(app)},
		Spec: cfv1alpha1.CFBuildSpec{
			AppRef:     corev1.LocalObjectReference{Name: app.Name},
			PackageRef: corev1.LocalObjectReference{Name: pkg},
			Lifecycle:  cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle},
		},
	}
}

// Stage creates a build of an uploaded package, of the package's app, as the user: cf-hnc stages
// it with kpack.
func Stage(ctx context.Context, c client.Client, pkg *cfv1alpha1.CFPackage) (*cfv1alpha1.CFBuild, error) {
	if !pkg.Uploaded() {
		return nil, unprocessable("Package %s has no bits yet: upload them before staging it", pkg.Name)
	}
	app := &cfv1alpha1.CFApp{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: pkg.Namespace, Name: pkg.Spec.AppRef.Name}, app); err != nil {
		return nil, about(AppResource, err)
	}
	build := NewBuild(app, pkg.Name)
	return build, about(BuildResource, c.Create(ctx, build))
}
