// Package status is how every cf-hnc reconciler sets conditions and reports status: one
// setter that stamps the generation a condition describes, and one reporter that, in a
// deferred step, writes the whole status when (and only when) it changed, and records an
// event for each condition whose status or reason changed, but for a wait on another component.
// Conditions set on an error path are reported like any other.
package status

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// Object is a cf-hnc object with conditions in its status.
type Object interface {
	client.Object
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
	SetObservedGeneration(int64)
}

// Set sets a condition on obj, stamped with the generation it describes.
func Set(obj Object, c metav1.Condition) {
	c.ObservedGeneration = obj.GetGeneration()
	conditions := obj.GetConditions()
	meta.SetStatusCondition(&conditions, c)
	obj.SetConditions(conditions)
}

// Reporter writes the status of reconciled objects.
type Reporter struct {
	client   client.Client
	recorder events.EventRecorder
}

// NewReporter returns a Reporter that patches through c and records events with recorder.
func NewReporter(c client.Client, recorder events.EventRecorder) *Reporter {
	return &Reporter{client: c, recorder: recorder}
}

// Track takes a snapshot of obj's status and returns the step that reports it: call it,
// deferred, when the reconcile ends, however it ends.
func (r *Reporter) Track(obj Object) func(context.Context) error {
	before, err := statusOf(obj)
	// A copy: Set changes a condition of the same type in place.
	beforeConditions := slices.Clone(obj.GetConditions())
	return func(ctx context.Context) error {
		if err != nil {
			return err
		}
		if current(obj) {
			obj.SetObservedGeneration(obj.GetGeneration())
		}
		after, err := statusOf(obj)
		if err != nil {
			return err
		}
		if equality.Semantic.DeepEqual(before, after) {
			return nil
		}
		if err := r.patch(ctx, obj, after); err != nil {
			return fmt.Errorf("reporting the status: %w", err)
		}
		r.recordChanges(obj, beforeConditions)
		return nil
	}
}

// current says whether every condition describes the object's generation: only then does the
// status as a whole describe it.
func current(obj Object) bool {
	for _, c := range obj.GetConditions() {
		if c.ObservedGeneration != obj.GetGeneration() {
			return false
		}
	}
	return true
}

// patch replaces the status as a whole, without a resourceVersion: the reconciler owns the
// status and has just computed all of it, so a stale cache must neither turn every status change
// into a conflict nor, as a merge patch against the stale status would, keep a field that a
// write the cache has yet to see set and this reconcile cleared.
func (r *Reporter) patch(ctx context.Context, obj Object, status any) error {
	replace, err := json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": status}})
	if err != nil {
		return err
	}
	return r.client.Status().Patch(ctx, obj, client.RawPatch(types.JSONPatchType, replace))
}

// recordChanges records an event for each condition whose status or reason changed, unless it
// is not True and waits for a step that another component takes: under load every space goes
// through several such steps, and an event for each would cost the apiserver a write and tell a
// person nothing that the status does not.
func (r *Reporter) recordChanges(obj Object, before []metav1.Condition) {
	for _, c := range obj.GetConditions() {
		if old := meta.FindStatusCondition(before, c.Type); old != nil && old.Status == c.Status && old.Reason == c.Reason {
			continue
		}
		if c.Status != metav1.ConditionTrue && cfv1alpha1.Waiting(c.Reason) {
			continue
		}
		eventType := corev1.EventTypeNormal
		if c.Status == metav1.ConditionFalse {
			eventType = corev1.EventTypeWarning
		}
		r.recorder.Eventf(obj, nil, eventType, c.Reason, "Reconcile", "%s: %s", c.Type, c.Message)
	}
}

// statusOf is obj's status as JSON-like data.
func statusOf(obj Object) (any, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return content["status"], nil
}
