package e2e_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// update changes obj as a user would: on the latest version, again after a conflict.
func update(ctx context.Context, obj client.Object, change func()) {
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return k8s.Update(ctx, obj)
	})).To(Succeed())
}

// events returns the events about obj.
func events(ctx SpecContext, obj client.Object) func() []eventsv1.Event {
	return func() []eventsv1.Event {
		list := &eventsv1.EventList{}
		Expect(k8s.List(ctx, list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
		var about []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.UID == obj.GetUID() {
				about = append(about, e)
			}
		}
		return about
	}
}

// BeNotFound matches a NotFound error.
func BeNotFound() OmegaMatcher {
	return WithTransform(apierrors.IsNotFound, BeTrue())
}
