// Package apply server-side applies typed objects of types that have no generated apply
// configurations (cf-hnc's, HNC's and kpack's), under one field manager per caller, and only
// when the object differs from the intent in a field the intent states.
package apply

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Object applies desired as the whole intent of owner, unless current (the object as last
// read; nil if it does not exist) already holds every field the intent states: fields that
// others set, such as defaults that a webhook adds, never cause a write. It reports whether it
// wrote. Only fields that are set in desired are applied: a typed object's unset fields (nil,
// or left out by omitempty) and its status are not part of the intent.
func Object(ctx context.Context, c client.Client, current, desired client.Object, owner client.FieldOwner) (bool, error) {
	gvk, err := c.GroupVersionKindFor(desired)
	if err != nil {
		return false, err
	}
	intent, err := intentOf(desired)
	if err != nil {
		return false, err
	}
	if current != nil && !reflect.ValueOf(current).IsNil() {
		have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(current)
		if err != nil {
			return false, err
		}
		if contains(have, intent) {
			return false, nil
		}
	}
	obj := &unstructured.Unstructured{Object: intent}
	obj.SetGroupVersionKind(gvk)
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), owner, client.ForceOwnership); err != nil {
		return false, fmt.Errorf("applying %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(desired), err)
	}
	return true, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, desired)
}

// intentOf is a typed object as an apply intent: without status, creation timestamp and the
// nil values that the converter writes for unset pointers and slices without omitempty
// (applying them would claim and clear fields that others own).
func intentOf(obj client.Object) (map[string]any, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(content, "status")
	unstructured.RemoveNestedField(content, "metadata", "creationTimestamp")
	pruneNulls(content)
	return content, nil
}

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

// contains says whether have holds every field of want with the same value. Lists must have
// the same items in the same order, each item holding what want's item states.
func contains(have, want any) bool {
	switch want := want.(type) {
	case map[string]any:
		have, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range want {
			if !contains(have[k], v) {
				return false
			}
		}
		return true
	case []any:
		have, ok := have.([]any)
		if !ok || len(have) != len(want) {
			return false
		}
		for i := range want {
			if !contains(have[i], want[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(have, want)
}
