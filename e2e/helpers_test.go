package e2e_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/internal/harness/testenv"
)

// update changes obj as a user would.
func update(ctx context.Context, obj client.Object, change func()) {
	GinkgoHelper()
	testenv.Update(ctx, k8s, obj, change)
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
