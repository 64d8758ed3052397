package staging

import (
	"context"
	"slices"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// An app owns the dedicated Builders its Image builds with, so that Kubernetes deletes a
// Builder with the last app that uses it; an app whose Image moves to another Builder lets go
// of the one before.

// builderRelease is a dedicated Builder that an app lets go of: deleted when no other app
// owns it, else without the app among its owners.
type builderRelease struct {
	builder *kpackv1alpha2.Builder
	delete  bool
}

// planRelease decides which of the dedicated Builders that the app owns it lets go of: all
// but the one its Image builds with (used).
func planRelease(owned []kpackv1alpha2.Builder, app *cfv1alpha1.CFApp, used corev1.ObjectReference) []builderRelease {
	var release []builderRelease
	for i := range owned {
		builder := &owned[i]
		if used.Kind == kpackv1alpha2.BuilderKind && builder.Name == used.Name {
			continue
		}
		release = append(release, builderRelease{builder: builder, delete: len(builder.OwnerReferences) == 1})
	}
	return release
}

// ownedBy says whether the app owns a Builder.
func ownedBy(app *cfv1alpha1.CFApp) func(metav1.OwnerReference) bool {
	return func(ref metav1.OwnerReference) bool { return ref.UID == app.UID }
}

// ownedBuilders lists the dedicated Builders of the app's namespace that the app owns.
func (r *BuildReconciler) ownedBuilders(ctx context.Context, app *cfv1alpha1.CFApp) ([]kpackv1alpha2.Builder, error) {
	builders := &kpackv1alpha2.BuilderList{}
	if err := r.client.List(ctx, builders, client.InNamespace(app.Namespace),
		client.MatchingLabels{cfv1alpha1.DedicatedBuilderLabel: "true"}); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(builders.Items, func(b kpackv1alpha2.Builder) bool {
		return !slices.ContainsFunc(b.OwnerReferences, ownedBy(app))
	}), nil
}

// own adds the app to the owners of a dedicated Builder.
func (r *BuildReconciler) own(ctx context.Context, builder *kpackv1alpha2.Builder, app *cfv1alpha1.CFApp) error {
	if slices.ContainsFunc(builder.OwnerReferences, ownedBy(app)) {
		return nil
	}
	patch := client.MergeFromWithOptions(builder.DeepCopy(), client.MergeFromWithOptimisticLock{})
	builder.OwnerReferences = append(builder.OwnerReferences, metav1.OwnerReference{
		APIVersion: cfv1alpha1.GroupVersion.String(), Kind: "CFApp", Name: app.Name, UID: app.UID,
	})
	return r.client.Patch(ctx, builder, patch)
}

// release lets go of the Builders the plan says, as the app.
func (r *BuildReconciler) release(ctx context.Context, app *cfv1alpha1.CFApp, releases []builderRelease) error {
	for _, release := range releases {
		builder := release.builder
		if release.delete {
			if err := r.client.Delete(ctx, builder, client.Preconditions{ResourceVersion: &builder.ResourceVersion}); client.IgnoreNotFound(err) != nil {
				return err
			}
			continue
		}
		patch := client.MergeFromWithOptions(builder.DeepCopy(), client.MergeFromWithOptimisticLock{})
		builder.OwnerReferences = slices.DeleteFunc(builder.OwnerReferences, ownedBy(app))
		if err := r.client.Patch(ctx, builder, patch); err != nil {
			return err
		}
	}
	return nil
}
