package cfapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

// conditioned is an org or a space: an object with a display name and conditions.
type conditioned interface {
	cfv1alpha1.DisplayNamed
	GetConditions() []metav1.Condition
}

// readyPoll is how often a new org or space is looked at in the cache while it becomes ready.
const readyPoll = 100 * time.Millisecond

// awaitReady waits until obj, just created, is Ready in the cache, and leaves the latest obj
// read. A reason that only an operator can end fails at once with CF's UnprocessableEntity and
// the condition's message. Past ReadyTimeout, the answer goes on with a warning
// (X-Cf-Warnings, which the cf CLI prints): the object exists, and becomes ready later.
func (s *server) awaitReady(ctx context.Context, w http.ResponseWriter, obj conditioned) error {
	var ready *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, readyPoll, s.cfg.ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		if err := s.cache.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		ready = meta.FindStatusCondition(obj.GetConditions(), cfv1alpha1.ReadyCondition)
		if ready != nil && ready.Status != metav1.ConditionTrue && cfv1alpha1.NeedsOperator(ready.Reason) {
			return false, cferror.UnprocessableEntity(ready.Message)
		}
		return ready != nil && ready.Status == metav1.ConditionTrue, nil
	})
	if !wait.Interrupted(err) || ctx.Err() != nil {
		return err
	}
	why := "cf-hnc has not made its namespace yet"
	if ready != nil {
		why = ready.Reason + ": " + ready.Message
	}
	w.Header().Add("X-Cf-Warnings", url.QueryEscape(fmt.Sprintf("%q (%s) is not ready after %s (%s); it becomes usable once it is",
		obj.GetDisplayName(), obj.GetName(), s.cfg.ReadyTimeout, why)))
	return nil
}
