package orgspace

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	cfv1alpha1 "code.cloudfoundry.org/cf-hnc/api/v1alpha1"
	cfscheme "code.cloudfoundry.org/cf-hnc/internal/scheme"
)

// stalled is a reader that answers nothing until its caller gives up: a cache that is still
// filling when a replica starts, or an apiserver that a flood slows down. Nothing else gives that.
type stalled struct{ client.Reader }

func (stalled) Get(ctx context.Context, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	<-ctx.Done()
	return ctx.Err()
}

func (stalled) List(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) error {
	<-ctx.Done()
	return ctx.Err()
}

// unread fails the spec if it is read.
type unread struct{ client.Reader }

func (unread) List(context.Context, client.ObjectList, ...client.ListOption) error {
	Fail("read the apiserver for a name that the cache holds")
	return nil
}

var _ = Describe("The org and space validators", func() {
	org := &cfv1alpha1.CFOrg{ObjectMeta: metav1.ObjectMeta{Namespace: "cf", Name: "4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10"},
		Spec: cfv1alpha1.CFOrgSpec{DisplayName: "Acme"}}
	space := &cfv1alpha1.CFSpace{ObjectMeta: metav1.ObjectMeta{Namespace: org.Name, Name: "0b9f2c4e-5d6a-4b7c-8e9f-a0b1c2d3e4f5"},
		Spec: cfv1alpha1.CFSpaceSpec{DisplayName: "dev"}}

	// Review 3, N10: a validator held every admission request as long as its reads took.
	DescribeTable("refuse, saying to try again, once their reads take longer than their deadline",
		func(_ SpecContext, cached, live client.Reader, validate func(names) error) {
			started := time.Now()
			err := validate(names{cached: cached, live: live, deadline: 200 * time.Millisecond})
			Expect(time.Since(started)).To(BeNumerically("<", 2*time.Second))
			Expect(apierrors.IsTimeout(err)).To(BeTrue(), "%v", err)
			Expect(err).To(MatchError(ContainSubstring("cf-hnc could not check the name in time")))
		},
		Entry("an org, with a cache that does not answer", SpecTimeout(10*time.Second), stalled{}, stalled{}, func(n names) error {
			_, err := (&OrgValidator{names: n, root: "cf"}).ValidateCreate(context.Background(), org)
			return err
		}),
		Entry("a space, with an apiserver that does not answer", SpecTimeout(10*time.Second), fake.NewClientBuilder().WithScheme(cfscheme.New()).Build(), stalled{}, func(n names) error {
			_, err := (&SpaceValidator{names: n, root: "cf"}).ValidateCreate(context.Background(), space)
			return err
		}),
		Entry("a renamed space", SpecTimeout(10*time.Second), stalled{}, stalled{}, func(n names) error {
			renamed := space.DeepCopy()
			renamed.Spec.DisplayName = "prod"
			_, err := (&SpaceValidator{names: n, root: "cf"}).ValidateUpdate(context.Background(), space, renamed)
			return err
		}),
	)

	It("refuses a name that the cache holds without reading the apiserver", func() {
		taken := org.DeepCopy()
		taken.Name, taken.Labels = "0b9f2c4e-5d6a-4b7c-8e9f-a0b1c2d3e4f5", map[string]string{cfv1alpha1.DisplayNameKeyLabel: cfv1alpha1.DisplayNameKey("Acme")}
		cached := fake.NewClientBuilder().WithScheme(cfscheme.New()).WithObjects(taken).Build()
		_, err := (&OrgValidator{names: names{cached: cached, live: unread{}, deadline: time.Second}, root: "cf"}).ValidateCreate(context.Background(), org)
		Expect(err).To(MatchError(ContainSubstring("Organization 'Acme' already exists.")))
	})
})
