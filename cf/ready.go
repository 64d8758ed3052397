package cf

import (
	"context"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// Conditioned is an org, a space or an app: an object with a display name and conditions.
type Conditioned interface {
	cfv1alpha1.DisplayNamed
	GetConditions() []metav1.Condition
}

// Wait is how long, and how often, a client looks at the cluster while it waits.
type Wait struct {
	Interval, Timeout time.Duration
}

// AwaitReady waits until obj, an org or a space just created, is Ready as r reads it, and leaves
// the latest obj read. A reason that only an operator can end fails at once (NeedsOperatorError);
// past the timeout it fails with NotReadyError, and obj exists and becomes ready later.
func AwaitReady(ctx context.Context, r client.Reader, obj Conditioned, w Wait) error {
	var ready *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, w.Interval, w.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := r.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, client.IgnoreNotFound(err) // a cache that has not seen it yet
		}
		ready = meta.FindStatusCondition(obj.GetConditions(), cfv1alpha1.ReadyCondition)
		switch {
		case ready == nil:
			return false, nil
		case ready.Status == metav1.ConditionTrue:
			return true, nil
		case cfv1alpha1.NeedsOperator(ready.Reason):
			return false, &NeedsOperatorError{Ready: ready}
		}
		return false, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return &NotReadyError{Timeout: w.Timeout, Ready: ready}
	}
	return err
}

// AwaitRoleManagement waits until the user, who just made a space, may grant roles in its
// namespace: an org manager may through the org's role bindings, which HNC copies into the space
// a moment after it makes the namespace, and the cf CLI grants the creator its space roles as
// soon as the space is made. Past the timeout it fails with NotReadyError.
func AwaitRoleManagement(ctx context.Context, c client.Client, namespace string, w Wait) error {
	err := wait.PollUntilContextTimeout(ctx, w.Interval, w.Timeout, true, func(ctx context.Context) (bool, error) {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Verb: "create", Group: rbacv1.GroupName, Resource: "rolebindings"},
		}}
		if err := c.Create(ctx, review); err != nil {
			return false, err
		}
		return review.Status.Allowed, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return &NotReadyError{Timeout: w.Timeout}
	}
	return err
}

// AwaitGone waits until obj, an org or a space being deleted, is gone; past the timeout it
// fails with NotGoneError, which says where the deletion stands.
func AwaitGone(ctx context.Context, c client.Client, obj Conditioned, w Wait) error {
	err := wait.PollUntilContextTimeout(ctx, w.Interval, w.Timeout, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return &NotGoneError{Timeout: w.Timeout, Ready: meta.FindStatusCondition(obj.GetConditions(), cfv1alpha1.ReadyCondition)}
	}
	return err
}

// DeletionFailure says why the deletion of obj (kind is Cloud Foundry's name of it), which still
// exists, has failed: it is not being deleted at all, or it takes longer than timeout, with what
// keeps it (an org's or a space's Ready condition says it; an app waits for its processes). It
// is nil while the deletion is in progress.
func DeletionFailure(obj Conditioned, kind string, timeout time.Duration, now time.Time) error {
	deleted := obj.GetDeletionTimestamp()
	if deleted == nil {
		return unprocessable("%s %s is not being deleted", kind, obj.GetName())
	}
	if now.Sub(deleted.Time) <= timeout {
		return nil
	}
	why := "cf-hnc has not finished deleting its namespace"
	switch ready := meta.FindStatusCondition(obj.GetConditions(), cfv1alpha1.ReadyCondition); {
	case kind == AppResource:
		why = "its processes, which go first, are not all gone"
	case ready != nil:
		why = ready.Message
	}
	return unprocessable("%s deletion timed out after %s: %s", kind, timeout, why)
}

// DeletingOrg reads the org of guid, which is being deleted, with r; nil once it is gone.
func DeletingOrg(ctx context.Context, r client.Reader, root, guid string) (Conditioned, error) {
	org := &cfv1alpha1.CFOrg{}
	err := r.Get(ctx, client.ObjectKey{Namespace: root, Name: guid}, org)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return org, err
}

// DeletingSpace reads the space of guid in the org of orgGUID, which is being deleted, with r
// (by NameField, in the org's namespace: the CF API's rights list spaces, and get none); nil once
// it is gone.
func DeletingSpace(ctx context.Context, r client.Reader, orgGUID, guid string) (Conditioned, error) {
	spaces := &cfv1alpha1.CFSpaceList{}
	if err := r.List(ctx, spaces, client.InNamespace(orgGUID), client.MatchingFields{NameField: guid}); err != nil || len(spaces.Items) == 0 {
		return nil, err
	}
	return &spaces.Items[0], nil
}
