package builders

import (
	"context"
	"slices"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/apply"
)

// ensureBuilder returns the Builder that stages a lifecycle in the space: the default Builder,
// or the lifecycle's dedicated Builder, made or updated here and owned by every app that uses
// it, so that Kubernetes deletes it with the last of them.
func (r *BuildReconciler) ensureBuilder(ctx context.Context, app *cfv1alpha1.CFApp, lifecycle cfv1alpha1.LifecycleData, space *cfv1alpha1.SpaceBuildConfig) (*kpackv1alpha2.Builder, error) {
	defaultBuilder := &kpackv1alpha2.Builder{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: space.Builder.Name}, defaultBuilder); err != nil {
		return defaultBuilder, err
	}
	if usesDefaultBuilder(lifecycle, defaultBuilder) {
		return defaultBuilder, nil
	}
	desired := desiredDedicatedBuilder(app.Namespace, lifecycle, defaultBuilder, space)
	current := &kpackv1alpha2.Builder{}
	err := r.client.Get(ctx, client.ObjectKeyFromObject(desired), current)
	if client.IgnoreNotFound(err) != nil {
		return desired, err
	}
	if apierrors.IsNotFound(err) || !equality.Semantic.DeepEqual(current.Spec, desired.Spec) {
		if err := apply.Object(ctx, r.client, desired, fieldOwner); err != nil {
			return desired, err
		}
		current = desired
	}
	return current, r.own(ctx, current, app)
}

// own adds the app to the Builder's owners.
func (r *BuildReconciler) own(ctx context.Context, builder *kpackv1alpha2.Builder, app *cfv1alpha1.CFApp) error {
	if slices.ContainsFunc(builder.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == app.UID }) {
		return nil
	}
	patch := client.MergeFromWithOptions(builder.DeepCopy(), client.MergeFromWithOptimisticLock{})
	builder.OwnerReferences = append(builder.OwnerReferences, metav1.OwnerReference{
		APIVersion: cfv1alpha1.GroupVersion.String(), Kind: "CFApp", Name: app.Name, UID: app.UID,
	})
	return r.client.Patch(ctx, builder, patch)
}

// releaseBuilders removes the app from the owners of the dedicated Builders other than keep,
// and deletes a Builder that no app owns any more.
func (r *BuildReconciler) releaseBuilders(ctx context.Context, app *cfv1alpha1.CFApp, keep string) error {
	builders := &kpackv1alpha2.BuilderList{}
	if err := r.client.List(ctx, builders, client.InNamespace(app.Namespace),
		client.MatchingLabels{cfv1alpha1.DedicatedBuilderLabel: "true"}); err != nil {
		return err
	}
	for i := range builders.Items {
		builder := &builders.Items[i]
		owned := func(ref metav1.OwnerReference) bool { return ref.UID == app.UID }
		if builder.Name == keep || !slices.ContainsFunc(builder.OwnerReferences, owned) {
			continue
		}
		if len(builder.OwnerReferences) == 1 {
			if err := r.client.Delete(ctx, builder, client.Preconditions{ResourceVersion: &builder.ResourceVersion}); client.IgnoreNotFound(err) != nil {
				return err
			}
			continue
		}
		patch := client.MergeFromWithOptions(builder.DeepCopy(), client.MergeFromWithOptimisticLock{})
		builder.OwnerReferences = slices.DeleteFunc(builder.OwnerReferences, owned)
		if err := r.client.Patch(ctx, builder, patch); err != nil {
			return err
		}
	}
	return nil
}
