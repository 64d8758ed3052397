package metricsauth

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	authenticationfake "k8s.io/client-go/kubernetes/typed/authentication/v1/fake"
	authorizationfake "k8s.io/client-go/kubernetes/typed/authorization/v1/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestMetricsAuth(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "metrics authorization")
}

// The decisions of the guard, with the reviews answered by a fake: tokens "reader" and
// "reader <anything>" belong to a user allowed to GET /metrics, token "nobody" to a user with no
// right, any other token to nobody the apiserver knows. The e2e suite checks the same endpoint against the apiserver.
var _ = Describe("the metrics guard", func() {
	var (
		g                 *guard
		now               time.Time
		reviews, accesses int
		reviewFails       error
	)

	BeforeEach(func() {
		now, reviews, accesses, reviewFails = time.Unix(1_000_000, 0), 0, 0, nil
		fake := &clienttesting.Fake{}
		fake.AddReactor("create", "tokenreviews", func(action clienttesting.Action) (bool, runtime.Object, error) {
			reviews++
			review := action.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
			token := review.Spec.Token
			user, _, _ := strings.Cut(token, " ")
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: user == "reader" || user == "nobody",
				User: authenticationv1.UserInfo{Username: user, Groups: []string{"system:authenticated"}}}
			return true, review, reviewFails
		})
		fake.AddReactor("create", "subjectaccessreviews", func(action clienttesting.Action) (bool, runtime.Object, error) {
			accesses++
			review := action.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
			attrs := review.Spec.NonResourceAttributes
			review.Status.Allowed = review.Spec.User == "reader" && attrs != nil && attrs.Path == "/metrics" && attrs.Verb == "get"
			return true, review, nil
		})
		g = newGuard((&authenticationfake.FakeAuthenticationV1{Fake: fake}).TokenReviews(),
			(&authorizationfake.FakeAuthorizationV1{Fake: fake}).SubjectAccessReviews(), func() time.Time { return now })
	})

	request := func(path, token string) (int, error) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return g.check(req)
	}
	scrape := func(token string) int {
		status, err := request("/metrics", token)
		Expect(err).NotTo(HaveOccurred())
		return status
	}

	It("answers 401 without a bearer token, and for a token the apiserver does not accept", func() {
		Expect(scrape("")).To(Equal(http.StatusUnauthorized))
		Expect(reviews).To(BeZero(), "no token, nothing to review")
		Expect(scrape("forged")).To(Equal(http.StatusUnauthorized))
		Expect(accesses).To(BeZero())
	})

	It("answers 403 to a user without the right, and remembers the refusal for a while", func() {
		Expect(scrape("nobody")).To(Equal(http.StatusForbidden))
		now = now.Add(refusedFor - time.Second)
		Expect(scrape("nobody")).To(Equal(http.StatusForbidden))
		Expect([]int{reviews, accesses}).To(Equal([]int{1, 1}))
		now = now.Add(2 * time.Second)
		Expect(scrape("nobody")).To(Equal(http.StatusForbidden))
		Expect([]int{reviews, accesses}).To(Equal([]int{2, 2}), "reviewed again once the refusal has lapsed")
	})

	It("answers a flood of new tokens 429 beyond a few reviews a second, and still lets a decided scraper in", func() {
		Expect(scrape("reader")).To(Equal(http.StatusOK))
		statuses := map[int]int{}
		for i := range 100 {
			statuses[scrape(fmt.Sprintf("forged-%d", i))]++
		}
		Expect(statuses).To(Equal(map[int]int{http.StatusUnauthorized: reviewBurst - 1, http.StatusTooManyRequests: 100 - reviewBurst + 1}))
		Expect(reviews).To(Equal(reviewBurst), "one review for the scraper, the rest for the flood")
		Expect(scrape("reader")).To(Equal(http.StatusOK), "a decided scraper is not held back")

		now = now.Add(time.Second)
		Expect(scrape("forged-again")).To(Equal(http.StatusUnauthorized), "reviews resume as time passes")
	})

	It("lets an allowed token scrape for a minute without new reviews, for the path it was allowed", func() {
		Expect(scrape("reader")).To(Equal(http.StatusOK))
		now = now.Add(allowedFor - time.Second)
		Expect(scrape("reader")).To(Equal(http.StatusOK))
		Expect([]int{reviews, accesses}).To(Equal([]int{1, 1}))

		status, err := request("/debug/other", "reader")
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(http.StatusForbidden), "another path is reviewed on its own")

		now = now.Add(2 * time.Second)
		Expect(scrape("reader")).To(Equal(http.StatusOK))
		Expect([]int{reviews, accesses}).To(Equal([]int{3, 3}), "reviewed again once the minute is over")
	})

	It("remembers a decision for its exact path and token, however they split", func() {
		status, err := request("/metrics", "reader secret")
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(http.StatusOK))
		status, err = request("/metrics%20reader", "secret")
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(http.StatusUnauthorized), "token \"secret\" is reviewed, and the apiserver does not know it")
		Expect(reviews).To(Equal(2))
	})

	It("answers 500 when a review fails, and lets nobody through", func() {
		reviewFails = errors.New("the apiserver is away")
		status, err := request("/metrics", "reader")
		Expect(err).To(MatchError(ContainSubstring("the apiserver is away")))
		Expect(status).To(Equal(http.StatusInternalServerError))
	})
})
