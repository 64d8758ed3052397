package buildconfig

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// TreeSelector selects the namespaces of CF's tree, the root and every namespace below it, by
// the tree label that HNC puts on each. The manager caches only these: HNC may serve other
// tenants in the same cluster, and their namespaces are none of cf-hnc's business.
func TreeSelector(root string) (labels.Selector, error) {
	inTree, err := labels.NewRequirement(root+hncv1alpha2.LabelTreeDepthSuffix, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*inTree), nil
}

// PlacesForSpaces says whether what an operator places in the namespace is for the spaces
// below it: true for the root and for an org namespace. A space has nothing below it.
func PlacesForSpaces(ns metav1.Object, root string) bool {
	_, isOrg := ns.GetLabels()[cfv1alpha1.OrgGUIDLabel]
	_, isSpace := ns.GetLabels()[cfv1alpha1.SpaceGUIDLabel]
	return ns.GetName() == root || (isOrg && !isSpace)
}

// WatchPlacements makes the controller that b builds reconcile again the build configuration of
// one kind placed in the root or an org namespace when the namespace enters the cache (HNC has
// put it in CF's tree) or its labels change (HNC has labelled it an org's). Without this, what
// an operator placed in a namespace before then would wait for its next change.
func WatchPlacements(b *builder.Builder, c client.Reader, root string, newList func() client.ObjectList) *builder.Builder {
	placedIn := func(ctx context.Context, ns client.Object) []reconcile.Request {
		if !PlacesForSpaces(ns, root) {
			return nil
		}
		list := newList()
		if err := c.List(ctx, list, inNamespace(ns.GetName())...); err != nil {
			return nil
		}
		var requests []reconcile.Request
		_ = meta.EachListItem(list, func(item runtime.Object) error {
			if obj := item.(client.Object); !IsCopy(obj) {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return requests
	}
	return b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(placedIn), builder.WithPredicates(predicate.LabelChangedPredicate{}))
}
