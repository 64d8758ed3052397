// Package status reports a reconciled object's status the same way in every reconciler: one
// patch when something changed, and an event for each condition that changed.
package status

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Report patches obj's status if it differs from original (a copy taken before the reconcile
// changed it), then records an event for each condition of after whose status or reason
// differs in before. A merge patch, not an update: the reconciler owns the status, and a
// stale cache must not turn every status change into a conflict.
func Report(ctx context.Context, c client.Client, recorder events.EventRecorder, obj, original client.Object, before, after []metav1.Condition) error {
	if equality.Semantic.DeepEqual(obj, original) {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(original)); err != nil {
		return err
	}
	for _, cond := range after {
		if old := meta.FindStatusCondition(before, cond.Type); old != nil && old.Status == cond.Status && old.Reason == cond.Reason {
			continue
		}
		eventType := corev1.EventTypeNormal
		if cond.Status == metav1.ConditionFalse {
			eventType = corev1.EventTypeWarning
		}
		recorder.Eventf(obj, nil, eventType, cond.Reason, "Reconcile", "%s: %s", cond.Type, cond.Message)
	}
	return nil
}
