package install

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// treeDepthLabel is the label HNC puts on every namespace of the tree under the root cf.
const treeDepthLabel = "cf.tree.hnc.x-k8s.io/depth"

// podSecurityLabels enforce the restricted Pod Security Standard; config/policies/
// pod-security.yaml sets them on every write of a namespace of the tree.
var podSecurityLabels = map[string]string{
	"pod-security.kubernetes.io/enforce":         "restricted",
	"pod-security.kubernetes.io/enforce-version": "latest",
}

// enforcePodSecurity puts the restricted Pod Security Standard's labels on the namespaces of the
// tree that lack them: those that no write has touched since config/policies/pod-security.yaml
// was installed (an installation from before it, or one made while the policy was loading).
func enforcePodSecurity(ctx context.Context, c client.Client) error {
	inTree, err := labels.NewRequirement(treeDepthLabel, selection.Exists, nil)
	if err != nil {
		return err
	}
	namespaces := &corev1.NamespaceList{}
	if err := c.List(ctx, namespaces, client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*inTree)}); err != nil {
		return err
	}
	for i := range namespaces.Items {
		ns := &namespaces.Items[i]
		if labels.SelectorFromSet(podSecurityLabels).Matches(labels.Set(ns.Labels)) {
			continue
		}
		patch := client.MergeFrom(ns.DeepCopy())
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		for k, v := range podSecurityLabels {
			ns.Labels[k] = v
		}
		if err := c.Patch(ctx, ns, patch); err != nil {
			return fmt.Errorf("enforcing the restricted Pod Security Standard in namespace %s: %w", ns.Name, err)
		}
	}
	return nil
}
