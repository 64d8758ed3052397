// Package apply server-side applies typed objects of types that have no generated apply
// configurations (cf-hnc's, HNC's and kpack's), under one field manager per caller.
package apply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Object applies obj as the whole intent of owner and reads the result back into obj. Only
// fields that are set in obj are applied: a typed object's unset fields (nil, or left out by
// omitempty) and its status are not part of the intent.
func Object(ctx context.Context, c client.Client, obj client.Object, owner client.FieldOwner) error {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	delete(content, "status")
	unstructured.RemoveNestedField(content, "metadata", "creationTimestamp")
	pruneNulls(content)
	intent := &unstructured.Unstructured{Object: content}
	intent.SetGroupVersionKind(gvk)
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(intent), owner, client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(intent.Object, obj)
}

// pruneNulls removes nil values, which the converter writes for unset pointers and slices
// without omitempty; applying them would claim and clear fields that others own.
func pruneNulls(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			pruneNulls(v)
		case []any:
			for _, item := range v {
				if item, ok := item.(map[string]any); ok {
					pruneNulls(item)
				}
			}
		}
	}
}
