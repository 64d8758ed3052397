package cli

import (
	"context"
	"errors"
	"io"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	"code.cloudfoundry.org/cf-hnc/internal/scheme"
)

var _ = Describe("polling a build", func() {
	// failingReads returns a follower whose first reads of the build fail with err.
	failingReads := func(err error, times int) (*follower, *cfv1alpha1.CFBuild) {
		build := cfBuild("b", condition(cfv1alpha1.SucceededCondition, metav1.ConditionFalse, cfv1alpha1.BuildFailedReason, "kpack build b-build-1 failed"))
		build.Namespace = "space"
		c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(&build).
			WithStatusSubresource(&build).
			WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if times > 0 {
					times--
					return err
				}
				return c.Get(ctx, key, obj, opts...)
			}}).Build()
		return &follower{c: c, out: io.Discard, display: newDisplay(io.Discard)}, &cfv1alpha1.CFBuild{ObjectMeta: metav1.ObjectMeta{Namespace: "space", Name: "b"}}
	}

	It("retries a read that failed short of the apiserver, such as the rate limiter refusing a wait", func(ctx SpecContext) {
		f, build := failingReads(errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline"), 2)
		finished, _, err := f.follow(ctx, build)
		Expect(err).NotTo(HaveOccurred())
		state, _ := finished.State()
		Expect(string(state)).To(Equal(failedState))
	})

	It("returns the apiserver's refusal at once", func(ctx SpecContext) {
		forbidden := apierrors.NewForbidden(schema.GroupResource{Group: cfv1alpha1.GroupVersion.Group, Resource: "cfbuilds"}, "b", errors.New("no"))
		f, build := failingReads(forbidden, 1)
		_, _, err := f.follow(ctx, build)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	})

	It("says the build has not finished, and why, when the reads fail until the end", func(ctx SpecContext) {
		f, build := failingReads(errors.New("connection refused"), 1000)
		ending, cancel := context.WithTimeoutCause(ctx, time.Second, errors.New("time is up"))
		defer cancel()
		_, _, err := f.follow(ending, build)
		Expect(err).To(MatchError(errUnfinished))
		Expect(err).To(MatchError(ContainSubstring("time is up")))
	})
})
