package cf

import (
	"cmp"
	"context"
	"slices"

	kpackv1alpha2 "github.com/pivotal/kpack/pkg/apis/build/v1alpha2"
	corev1alpha1 "github.com/pivotal/kpack/pkg/apis/core/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Stacks and buildpacks are kpack's ClusterStacks and the buildpacks of its ClusterStores,
// which an app's lifecycle names. They are cluster-scoped and the same for every user: the CF
// API reads them with its own rights.

// Stacks lists kpack's ClusterStacks.
func Stacks(ctx context.Context, r client.Reader) ([]kpackv1alpha2.ClusterStack, error) {
	stacks := &kpackv1alpha2.ClusterStackList{}
	if err := r.List(ctx, stacks); err != nil {
		return nil, err
	}
	return stacks.Items, nil
}

// Stores lists kpack's ClusterStores.
func Stores(ctx context.Context, r client.Reader) ([]kpackv1alpha2.ClusterStore, error) {
	stores := &kpackv1alpha2.ClusterStoreList{}
	if err := r.List(ctx, stores); err != nil {
		return nil, err
	}
	return stores.Items, nil
}

// Buildpack is a buildpack as Cloud Foundry lists it: one per buildpack id and stack.
type Buildpack struct {
	corev1alpha1.BuildpackStatus
	// Stack is the name of a ClusterStack the buildpack supports; "" for one that supports none.
	Stack string
	// Store is the ClusterStore that offers it.
	Store *kpackv1alpha2.ClusterStore
	// Position orders the buildpacks, from 1.
	Position int
}

// Buildpacks are the buildpacks of kpack's ClusterStores: one per buildpack id and ClusterStack
// whose stack it supports, ordered by id and stack, at positions from 1. A buildpack that
// supports none of the stacks has no stack.
func Buildpacks(stores []kpackv1alpha2.ClusterStore, stacks []kpackv1alpha2.ClusterStack) []Buildpack {
	type key struct{ id, stack string }
	found := map[key]Buildpack{}
	for i := range stores {
		for _, bp := range stores[i].Status.Buildpacks {
			for _, stack := range supportedStacks(bp, stacks) {
				if k := (key{bp.Id, stack}); !hasKey(found, k) {
					found[k] = Buildpack{BuildpackStatus: bp, Stack: stack, Store: &stores[i]}
				}
			}
		}
	}
	keys := make([]key, 0, len(found))
	for k := range found {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.stack, b.stack)) })
	buildpacks := make([]Buildpack, len(keys))
	for i, k := range keys {
		buildpacks[i] = found[k]
		buildpacks[i].Position = i + 1
	}
	return buildpacks
}

// supportedStacks are the names of the ClusterStacks whose stack a buildpack supports, or one
// empty name if it supports none.
func supportedStacks(bp corev1alpha1.BuildpackStatus, stacks []kpackv1alpha2.ClusterStack) []string {
	var names []string
	for i := range stacks {
		if slices.ContainsFunc(bp.Stacks, func(s corev1alpha1.BuildpackStack) bool { return s.ID == "*" || s.ID == StackID(&stacks[i]) }) {
			names = append(names, stacks[i].Name)
		}
	}
	if names == nil {
		return []string{""}
	}
	return names
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}
