package builders

import (
	"context"
	"slices"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// own adds the app to the owners of a dedicated Builder, so that Kubernetes deletes the Builder
// with the last app that uses it.
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

// releaseBuilders removes the app from the owners of its dedicated Builders other than the one
// its Image uses, and deletes a Builder that no app owns any more.
func (r *BuildReconciler) releaseBuilders(ctx context.Context, app *cfv1alpha1.CFApp, used corev1.ObjectReference) error {
	builders := &kpackv1alpha2.BuilderList{}
	if err := r.client.List(ctx, builders, client.InNamespace(app.Namespace),
		client.MatchingLabels{cfv1alpha1.DedicatedBuilderLabel: "true"}); err != nil {
		return err
	}
	owned := func(ref metav1.OwnerReference) bool { return ref.UID == app.UID }
	for i := range builders.Items {
		builder := &builders.Items[i]
		if (used.Kind == kpackv1alpha2.BuilderKind && builder.Name == used.Name) || !slices.ContainsFunc(builder.OwnerReferences, owned) {
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
