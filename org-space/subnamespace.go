// Package orgspace makes Cloud Foundry orgs and spaces HNC namespaces: a CFOrg in the root
// namespace becomes an org namespace under it, a CFSpace in an org namespace becomes a space
// namespace under the org. Each is made from a SubnamespaceAnchor, labelled with the GUIDs,
// and deleted (an org with all its spaces) through a finalizer. A space also reports whether
// it can build (buildconfig). Webhooks keep display names unique and orgs and spaces in their
// place.
package orgspace

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// Finalizer keeps a CFOrg or CFSpace until its namespace is gone.
const Finalizer = "workloads.cloudfoundry.org/namespace"

// fieldOwner is the server-side apply field manager of everything this package writes.
const fieldOwner = client.FieldOwner("cf-hnc-org-space")

// deletionPoll is how often a deletion that waits for HNC and the namespace controller is
// looked at again, in case the event that ends the wait is missed.
const deletionPoll = 5 * time.Second

// operatorRecheck is how often a state that only an operator can end is looked at again.
const operatorRecheck = time.Minute

// AnchorSelector selects the SubnamespaceAnchors that cf-hnc makes, which carry its
// managed-by label: the manager caches those, not every anchor of the cluster.
var AnchorSelector = labels.SelectorFromSet(anchorLabels)

var anchorLabels = labels.Set{"app.kubernetes.io/managed-by": "cf-hnc"}

// subnamespace is what orgs and spaces share: a namespace that HNC makes from an anchor in
// the parent namespace, with the labels and annotations that cf-hnc asks for on the anchor.
// HNC puts them on the namespace (and on every namespace below it) in the same write as its
// tree labels: cf-hnc never writes the namespace itself, since HNC re-syncs the tree on every
// change of one (ADR 9). HNC runs with --managed-namespace-label and
// --managed-namespace-annotation for these keys (config/hnc), and puts them back when anybody
// changes them on the namespace.
type subnamespace struct {
	parent      string
	name        string
	labels      map[string]string
	annotations map[string]string
}

// ensure creates the anchor if it is missing, keeps the labels and annotations it asks for,
// and returns the Ready condition: True once HNC made the namespace from the anchor, placed it
// in the tree and labelled it (discovery reads the tree labels, everything else the GUID
// labels), with that namespace; the anchor's state only for a conflict or a refusal.
func (s subnamespace) ensure(ctx context.Context, c client.Client) (metav1.Condition, *corev1.Namespace, error) {
	anchor := &hncv1alpha2.SubnamespaceAnchor{ObjectMeta: metav1.ObjectMeta{Namespace: s.parent, Name: s.name}}
	err := c.Get(ctx, client.ObjectKeyFromObject(anchor), anchor)
	switch {
	case apierrors.IsNotFound(err):
		anchor.Labels = maps.Clone(anchorLabels)
		anchor.Spec = s.anchorSpec()
		if err = c.Create(ctx, anchor, fieldOwner); apierrors.IsAlreadyExists(err) {
			err = s.adopt(ctx, c, anchor)
		}
	case err == nil && !equality.Semantic.DeepEqual(anchor.Spec, s.anchorSpec()):
		patch := client.MergeFrom(anchor.DeepCopy())
		anchor.Spec = s.anchorSpec()
		err = c.Patch(ctx, anchor, patch, fieldOwner)
	}
	// HNC's webhook refuses an anchor for a namespace that exists already, or in a namespace
	// that may have no subnamespaces: states to report, not errors to retry.
	switch {
	case apierrors.IsConflict(err):
		return notReady(cfv1alpha1.AnchorConflictReason, "%v", err), nil, nil
	case apierrors.IsForbidden(err):
		return notReady(cfv1alpha1.AnchorForbiddenReason, "%v", err), nil, nil
	case apierrors.IsInvalid(err):
		return notReady(cfv1alpha1.AnchorRefusedReason, "%v (HNC needs the managed label and annotation flags of config/hnc)", err), nil, nil
	case err != nil:
		return metav1.Condition{}, nil, fmt.Errorf("anchor %s/%s: %w", s.parent, s.name, err)
	}
	switch anchor.Status.State {
	case hncv1alpha2.Conflict:
		return notReady(cfv1alpha1.AnchorConflictReason,
			"a namespace named %s already exists and is not a subnamespace of %s", s.name, s.parent), nil, nil
	case hncv1alpha2.Forbidden:
		return notReady(cfv1alpha1.AnchorForbiddenReason, "HNC does not allow subnamespaces in %s", s.parent), nil, nil
	}
	// The namespace itself says when HNC has made and placed it: under load HNC's anchor
	// reconciler reports Ok a minute after the namespace, its tree labels and the copies.
	ns, err := s.namespace(ctx, c)
	if err != nil {
		return metav1.Condition{}, nil, err
	}
	if ns == nil || ns.Labels[s.parent+hncv1alpha2.LabelTreeDepthSuffix] != "1" ||
		!isSubset(s.labels, ns.Labels) || !isSubset(s.annotations, ns.Annotations) {
		return s.pending(), nil, nil
	}
	return metav1.Condition{Type: cfv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: cfv1alpha1.NamespaceReadyReason,
		Message: fmt.Sprintf("namespace %s exists under %s", s.name, s.parent)}, ns, nil
}

// adopt labels an anchor that the cache does not hold, as cf-hnc labels the anchors it makes,
// and states its spec: a release before the label made it, somebody took the label off, or
// the cache has not seen it yet. Once labelled, the cache holds it.
func (s subnamespace) adopt(ctx context.Context, c client.Client, anchor *hncv1alpha2.SubnamespaceAnchor) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"labels": anchorLabels},
		"spec":     s.anchorSpec(),
	})
	if err != nil {
		return err
	}
	return c.Patch(ctx, anchor, client.RawPatch(types.MergePatchType, patch), fieldOwner)
}

// pending is the Ready condition while HNC makes the namespace, places it in the tree and
// labels it: one condition for every step, so that waiting costs one status write, not one
// for each step that HNC takes.
func (s subnamespace) pending() metav1.Condition {
	return notReady(cfv1alpha1.AnchorPendingReason,
		"waiting for HNC to make namespace %s from anchor %s/%s, with its tree labels and the labels the anchor asks for", s.name, s.parent, s.name)
}

// anchorSpec asks HNC for the subnamespace's labels and annotations, in a stable order.
func (s subnamespace) anchorSpec() hncv1alpha2.SubnamespaceAnchorSpec {
	return hncv1alpha2.SubnamespaceAnchorSpec{Labels: metaKVPs(s.labels), Annotations: metaKVPs(s.annotations)}
}

func metaKVPs(m map[string]string) []hncv1alpha2.MetaKVP {
	var kvps []hncv1alpha2.MetaKVP
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kvps = append(kvps, hncv1alpha2.MetaKVP{Key: k, Value: m[k]})
	}
	return kvps
}

func isSubset(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// namespace returns the namespace of the subnamespace's name if HNC made it from this
// subnamespace's anchor; nil if there is none, or if a namespace of that name that cf-hnc did
// not ask for is in the way (an anchor conflict): that one is not ours to touch.
func (s subnamespace) namespace(ctx context.Context, c client.Reader) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: s.name}, ns); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if ns.Annotations[hncv1alpha2.SubnamespaceOf] != s.parent {
		return nil, nil
	}
	return ns, nil
}

// allowCascadingDeletion lets HNC delete the namespace together with its own subnamespaces,
// if the namespace is ours.
func (s subnamespace) allowCascadingDeletion(ctx context.Context, c client.Client) error {
	ns, err := s.namespace(ctx, c)
	if ns == nil || err != nil {
		return err
	}
	hierarchy := &hncv1alpha2.HierarchyConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: s.name, Name: hncv1alpha2.Singleton}}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"allowCascadingDeletion":true}}`))
	return client.IgnoreNotFound(c.Patch(ctx, hierarchy, patch, fieldOwner))
}

// addFinalizerAndKey keeps obj until its namespace is gone, and labels it with the key of its
// display name if the webhooks did not (made before the label, or with the webhooks off), in
// one write.
func addFinalizerAndKey(ctx context.Context, c client.Client, obj cfv1alpha1.DisplayNamed) error {
	patch := metadataPatch(obj)
	added := controllerutil.AddFinalizer(obj, Finalizer)
	if labelled := setDisplayNameKey(obj); !added && !labelled {
		return nil
	}
	return c.Patch(ctx, obj, patch)
}

// metadataPatch is a patch of what cf-hnc changes of an org's or a space's metadata from now
// on: the cache holds only the labels and annotations cf-hnc reads, and an update of the whole
// object would remove the others. The finalizers are patched as a list, so it is a patch of
// this version of the object only.
func metadataPatch(obj client.Object) client.Patch {
	return client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
}

// finishDeletion deletes the anchor and, once the namespace HNC made from it is gone, records
// it and releases obj; until then it asks to be called again. uncached says whether the
// namespace is gone: the cache holds only CF's tree, and a namespace may leave the tree before
// it is gone.
func (s subnamespace) finishDeletion(ctx context.Context, c client.Client, uncached client.Reader, recorder events.EventRecorder, obj client.Object) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return ctrl.Result{}, nil
	}
	anchor := &hncv1alpha2.SubnamespaceAnchor{ObjectMeta: metav1.ObjectMeta{Namespace: s.parent, Name: s.name}}
	if err := c.Delete(ctx, anchor); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("deleting anchor %s/%s: %w", s.parent, s.name, err)
	}
	ns, err := s.namespace(ctx, uncached)
	if ns != nil || err != nil {
		return ctrl.Result{RequeueAfter: deletionPoll}, err
	}
	recorder.Eventf(obj, nil, corev1.EventTypeNormal, cfv1alpha1.DeletingReason, "Delete", "namespace %s is deleted", s.name)
	patch := metadataPatch(obj)
	controllerutil.RemoveFinalizer(obj, Finalizer)
	return ctrl.Result{}, c.Patch(ctx, obj, patch)
}

// requeue looks again now and then at a state that no watched event may end: one that only an
// operator can end, and a build ServiceAccount that names a Secret that does not exist, which
// is no build configuration, so neither cached nor watched.
func requeue(conditions ...metav1.Condition) ctrl.Result {
	for _, c := range conditions {
		if c.Status != metav1.ConditionTrue && (cfv1alpha1.NeedsOperator(c.Reason) || c.Reason == cfv1alpha1.ServiceAccountSecretMissingReason) {
			return ctrl.Result{RequeueAfter: operatorRecheck}
		}
	}
	return ctrl.Result{}
}

func notReady(reason, format string, args ...any) metav1.Condition {
	return metav1.Condition{Type: cfv1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
		Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// sameName maps an anchor to the org or space of the same name in the same namespace.
func sameName(_ context.Context, o client.Object) []ctrl.Request {
	return []ctrl.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
}
