// Package metricsauth guards the manager's metrics endpoint as the apiserver guards its own: a
// request needs a bearer token that the apiserver accepts (a TokenReview), for a user that the
// apiserver allows the request's verb on its path (a SubjectAccessReview). Every pod can reach the
// port, so decisions are remembered and reviews of tokens not yet decided on are rate limited:
// a flood of wrong tokens costs the apiserver a few reviews a second, not one per request.
//
// controller-runtime's filters.WithAuthenticationAndAuthorization does the same, but it links the
// apiserver's authentication and authorization libraries (and with them CEL, gRPC and
// OpenTelemetry): 30 MB of the manager's 82 MB binary, and their pages and init-time heap in
// every manager's memory.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// allowedFor is how long an allowed token may scrape again without new reviews: a scraper every
// 15 s costs the apiserver two reviews a minute, and a revoked right takes at most this long to
// bite, as with the apiserver's own delegated authorization.
const allowedFor = time.Minute

// refusedFor is how long a refused token is answered without new reviews: a client that sends the
// same wrong token in a loop costs a review per this period.
const refusedFor = 10 * time.Second

// reviewsPerSecond and reviewBurst bound the reviews of tokens the guard has not decided on: a
// flood of ever new tokens is answered 429 beyond them, rather than spending the manager's
// share of the apiserver on TokenReviews. Scrapers already decided on are not held back.
const (
	reviewsPerSecond = 5
	reviewBurst      = 10
)

// maxDecided bounds the remembered decisions; past it they are all forgotten at once.
const maxDecided = 1024

// reviewTimeout bounds the reviews of one request.
const reviewTimeout = 10 * time.Second

// Filter is a metricsserver.Options.FilterProvider.
func Filter(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authentication, err := authenticationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	authorization, err := authorizationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		g := newGuard(authentication.TokenReviews(), authorization.SubjectAccessReviews(), time.Now)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			status, err := g.check(r)
			if err != nil {
				log.Error(err, "cannot review a metrics request", "path", r.URL.Path)
			}
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			if status != http.StatusOK {
				http.Error(w, http.StatusText(status), status)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}, nil
}

type guard struct {
	tokens  authenticationclient.TokenReviewInterface
	access  authorizationclient.SubjectAccessReviewInterface
	now     func() time.Time
	reviews *rate.Limiter

	mu      sync.Mutex
	decided map[request]decision
}

// request is what a decision was for: the token is kept only as its hash.
type request struct {
	verb, path string
	token      [sha256.Size]byte
}

// decision is the status a request was answered, until when it stands.
type decision struct {
	status int
	until  time.Time
}

func newGuard(tokens authenticationclient.TokenReviewInterface, access authorizationclient.SubjectAccessReviewInterface, now func() time.Time) *guard {
	return &guard{
		tokens: tokens, access: access, now: now,
		reviews: rate.NewLimiter(reviewsPerSecond, reviewBurst),
		decided: map[request]decision{},
	}
}

// check answers 200 for a request that may go on, 401 without an accepted token, 403 for a user
// without the right, 429 while too many undecided tokens are being reviewed, 500 when a review
// fails.
func (g *guard) check(r *http.Request) (int, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return http.StatusUnauthorized, nil
	}
	verb := strings.ToLower(r.Method)
	key := request{verb: verb, path: r.URL.Path, token: sha256.Sum256([]byte(token))}
	if status, ok := g.decision(key); ok {
		return status, nil
	}
	if !g.reviews.AllowN(g.now(), 1) {
		return http.StatusTooManyRequests, nil
	}
	status, err := g.review(r.Context(), token, verb, r.URL.Path)
	if err != nil {
		return status, err
	}
	g.decide(key, status)
	return status, nil
}

// review asks the apiserver who the token is and whether that user may send the request.
func (g *guard) review(ctx context.Context, token, verb, path string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := g.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return http.StatusInternalServerError, err
	}
	if !review.Status.Authenticated {
		return http.StatusUnauthorized, nil
	}
	user := review.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	access, err := g.access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return http.StatusInternalServerError, err
	}
	if !access.Status.Allowed {
		return http.StatusForbidden, nil
	}
	return http.StatusOK, nil
}

func (g *guard) decision(key request) (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	d, ok := g.decided[key]
	return d.status, ok && g.now().Before(d.until)
}

func (g *guard) decide(key request, status int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.decided) >= maxDecided {
		clear(g.decided)
	}
	standsFor := refusedFor
	if status == http.StatusOK {
		standsFor = allowedFor
	}
	g.decided[key] = decision{status: status, until: g.now().Add(standsFor)}
}
