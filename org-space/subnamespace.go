// Package orgspace makes Cloud Foundry orgs and spaces HNC namespaces: a CFOrg in the root
// namespace becomes an org namespace under it, a CFSpace in an org namespace becomes a space
// namespace under the org. Each is made from a SubnamespaceAnchor, labelled with the GUIDs,
// and deleted (an org with all its spaces) through a finalizer. Webhooks keep display names
// unique and orgs and spaces in their place.
package orgspace

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/apply"
)

// Finalizer keeps a CFOrg or CFSpace until its namespace is gone.
const Finalizer = "workloads.cloudfoundry.org/namespace"

// fieldOwner is the server-side apply field manager of everything this package writes.
const fieldOwner = client.FieldOwner("cf-hnc-org-space")

// subnamespace is what orgs and spaces share: a namespace that HNC makes from an anchor in
// the parent namespace, and the labels and annotations cf-hnc keeps on it.
type subnamespace struct {
	parent      string
	name        string
	labels      map[string]string
	annotations map[string]string
}

// ensure creates the anchor if it is missing and returns the Ready condition: True once HNC
// made the namespace and placed it in the tree (its tree labels, which discovery reads, are
// set a moment after the anchor turns Ok). Nothing is written when the anchor exists.
func (s subnamespace) ensure(ctx context.Context, c client.Client) (metav1.Condition, error) {
	anchor := &hncv1alpha2.SubnamespaceAnchor{ObjectMeta: metav1.ObjectMeta{Namespace: s.parent, Name: s.name}}
	err := c.Get(ctx, client.ObjectKeyFromObject(anchor), anchor)
	if apierrors.IsNotFound(err) {
		err = apply.Object(ctx, c, anchor, fieldOwner)
	}
	// HNC's webhook refuses an anchor for a namespace that exists already, or in a namespace
	// that may have no subnamespaces: states to report, not errors to retry.
	switch {
	case apierrors.IsConflict(err):
		return notReady(cfv1alpha1.AnchorConflictReason, "%v", err), nil
	case apierrors.IsForbidden(err):
		return notReady(cfv1alpha1.AnchorForbiddenReason, "%v", err), nil
	case err != nil:
		return metav1.Condition{}, fmt.Errorf("anchor %s/%s: %w", s.parent, s.name, err)
	}
	condition := anchorCondition(s.parent, s.name, anchor.Status.State)
	if condition.Status != metav1.ConditionTrue {
		return condition, nil
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: s.name}, ns); err != nil {
		return metav1.Condition{}, err
	}
	if ns.Labels[s.parent+hncv1alpha2.LabelTreeDepthSuffix] != "1" {
		return notReady(cfv1alpha1.AnchorPendingReason, "HNC has not placed namespace %s under %s yet", s.name, s.parent), nil
	}
	return condition, nil
}

// label keeps the namespace's labels and annotations, writing only when one differs. Call it
// once the namespace exists, with every label of this field manager: one left out is removed.
func (s subnamespace) label(ctx context.Context, c client.Client) error {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: s.name}, ns); err != nil {
		return err
	}
	if isSubset(s.labels, ns.Labels) && isSubset(s.annotations, ns.Annotations) {
		return nil
	}
	intent := corev1ac.Namespace(s.name).WithLabels(s.labels).WithAnnotations(s.annotations)
	if err := c.Apply(ctx, intent, fieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("labelling namespace %s: %w", s.name, err)
	}
	return nil
}

func isSubset(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// anchorCondition turns HNC's anchor state into a Ready condition.
func anchorCondition(parent, name string, state hncv1alpha2.SubnamespaceAnchorState) metav1.Condition {
	c := metav1.Condition{Type: cfv1alpha1.ReadyCondition, Status: metav1.ConditionFalse}
	switch state {
	case hncv1alpha2.Ok:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, cfv1alpha1.NamespaceReadyReason,
			fmt.Sprintf("namespace %s exists under %s", name, parent)
	case hncv1alpha2.Conflict:
		c.Reason, c.Message = cfv1alpha1.AnchorConflictReason,
			fmt.Sprintf("a namespace named %s already exists and is not a subnamespace of %s", name, parent)
	case hncv1alpha2.Forbidden:
		c.Reason, c.Message = cfv1alpha1.AnchorForbiddenReason,
			fmt.Sprintf("HNC does not allow subnamespaces in %s", parent)
	case hncv1alpha2.Missing:
		c.Reason, c.Message = cfv1alpha1.AnchorMissingReason,
			fmt.Sprintf("HNC has not created namespace %s yet", name)
	default:
		c.Reason, c.Message = cfv1alpha1.AnchorPendingReason,
			fmt.Sprintf("waiting for HNC to handle the anchor %s/%s", parent, name)
	}
	return c
}

// remove deletes the anchor and reports whether the namespace HNC made from it is gone. A
// namespace of the same name that HNC did not make from this anchor (an anchor conflict) is
// not ours and is left alone.
func (s subnamespace) remove(ctx context.Context, c client.Client) (gone bool, err error) {
	anchor := &hncv1alpha2.SubnamespaceAnchor{ObjectMeta: metav1.ObjectMeta{Namespace: s.parent, Name: s.name}}
	if err := c.Delete(ctx, anchor); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("deleting anchor %s/%s: %w", s.parent, s.name, err)
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: s.name}, ns); err != nil {
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}
	return ns.Annotations[hncv1alpha2.SubnamespaceOf] != s.parent, nil
}

// allowCascadingDeletion lets HNC delete the namespace together with its own subnamespaces.
func (s subnamespace) allowCascadingDeletion(ctx context.Context, c client.Client) error {
	hierarchy := &hncv1alpha2.HierarchyConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: hncv1alpha2.GroupVersion.String(), Kind: "HierarchyConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Namespace: s.name, Name: hncv1alpha2.Singleton},
		Spec:       hncv1alpha2.HierarchyConfigurationSpec{AllowCascadingDeletion: true},
	}
	err := apply.Object(ctx, c, hierarchy, fieldOwner)
	if apierrors.IsNotFound(err) {
		return nil // the namespace is already gone
	}
	return err
}

// needsOperator says whether a Ready condition waits for an operator (a conflicting or
// forbidden namespace) rather than for an event: such a state is looked at again now and then.
func needsOperator(ready metav1.Condition) bool {
	return ready.Reason == cfv1alpha1.AnchorConflictReason || ready.Reason == cfv1alpha1.AnchorForbiddenReason
}

// addFinalizer keeps obj until its namespace is gone.
func addFinalizer(ctx context.Context, c client.Client, obj client.Object) error {
	if !controllerutil.AddFinalizer(obj, Finalizer) {
		return nil
	}
	return c.Update(ctx, obj)
}

// finishDeletion deletes the anchor and, once the namespace is gone, records it and releases
// obj; until then it asks to be called again.
func (s subnamespace) finishDeletion(ctx context.Context, c client.Client, recorder events.EventRecorder, obj client.Object) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return ctrl.Result{}, nil
	}
	gone, err := s.remove(ctx, c)
	if err != nil || !gone {
		return ctrl.Result{RequeueAfter: deletionPoll}, err
	}
	recorder.Eventf(obj, nil, corev1.EventTypeNormal, cfv1alpha1.DeletingReason, "Delete", "namespace %s is deleted", s.name)
	controllerutil.RemoveFinalizer(obj, Finalizer)
	return ctrl.Result{}, c.Update(ctx, obj)
}

// setCondition sets a condition with the generation it describes.
func setCondition(conditions *[]metav1.Condition, c metav1.Condition, generation int64) {
	c.ObservedGeneration = generation
	meta.SetStatusCondition(conditions, c)
}
