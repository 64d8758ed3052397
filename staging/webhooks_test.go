package staging

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
)

// fillingCache answers no read until its caller gives up, as the manager's cache does while it
// fills when a replica starts.
type fillingCache struct{ client.Reader }

func (fillingCache) Get(ctx context.Context, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	<-ctx.Done()
	return ctx.Err()
}

var _ = Describe("The lifecycle validator", func() {
	// Review 3, N10: a validator held the admission request as long as its reads took.
	It("refuses a lifecycle it cannot check by its deadline, saying why", func(_ SpecContext) {
		v := &lifecycleValidator{reader: fillingCache{}, deadline: 200 * time.Millisecond}
		started := time.Now()
		errs := v.validate(context.Background(), "space", cfv1alpha1.Lifecycle{Type: cfv1alpha1.BuildpackLifecycle, Data: cfv1alpha1.LifecycleData{Stack: "cflinuxfs4"}})
		Expect(time.Since(started)).To(BeNumerically("<", 2*time.Second))
		Expect(errs.ToAggregate()).To(MatchError(ContainSubstring("context deadline exceeded")))
	}, SpecTimeout(10*time.Second))
})
