package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"code.cloudfoundry.org/cf-hnc/cf"
	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

// The kinds of user that /whoami reports (cli:resources/user_resource.go).
const (
	UserKind           = "User"
	ServiceAccountKind = "ServiceAccount"
)

// Identity is the user as the kube-apiserver sees them.
type Identity struct {
	Name   string
	Kind   string
	Groups []string
}

// Session is a user's identity and a client that acts with the user's own credentials.
type Session struct {
	Identity Identity
	Client   client.Client
}

// User is the session's user, as package cf acts for them.
func (s *Session) User() cf.User {
	return cf.User{Name: s.Identity.Name, Groups: s.Identity.Groups, Client: s.Client}
}

// Anybody who reaches the API can make it review credentials: a SelfSubjectReview costs the
// kube-apiserver a token review (a webhook, an OIDC check) or, for a client certificate, a TLS
// handshake, and is answered before the apiserver's priority and fairness can shed it (review 3,
// N8). So the API remembers refusals as it remembers sessions, and reviews the credentials it
// has not decided on at a bounded rate, answering 429 beyond it, as internal/metricsauth guards
// the manager's metrics.

// ReviewLimit bounds the reviews of credentials that the API has not decided on: PerSecond
// sustained, Burst at once. The sessions and refusals it remembers are not reviewed again.
type ReviewLimit struct {
	PerSecond float64
	Burst     int
}

// DefaultReviews lets a thousand users who each renew their session every 30 s (cf-api's
// --session-ttl) in, and a flood of wrong credentials cost the apiserver 20 reviews a second.
var DefaultReviews = ReviewLimit{PerSecond: 20, Burst: 40}

// refusedFor is how long refused credentials are answered without a new review: a client that
// sends the same wrong credentials in a loop costs a review per this period.
const refusedFor = 10 * time.Second

// maxRefused bounds the refusals remembered; the least recently used go first.
const maxRefused = 4096

// reviewRetry is when credentials turned away by the review limit may try again.
const reviewRetry = time.Second

// Authenticator makes sessions from credentials, and remembers each for a short while so that
// the cf CLI's several requests per command cost the kube-apiserver one review.
type Authenticator struct {
	base    *rest.Config
	options client.Options
	ttl     time.Duration

	sessions *sessionCache
	refused  *cache.LRUExpireCache
	reviews  *rate.Limiter
	limit    ReviewLimit
}

// NewAuthenticator returns an Authenticator whose clients reach the kube-apiserver of config
// (its address and CA, never its credentials) with options' scheme and RESTMapper, that
// remembers a session for ttl (a user whose credentials are revoked keeps the identity that
// long, while every read and write still goes to the apiserver with the credentials), and that
// reviews credentials it has not decided on within limit.
func NewAuthenticator(config *rest.Config, options client.Options, ttl time.Duration, limit ReviewLimit) *Authenticator {
	return &Authenticator{
		base:     rest.AnonymousClientConfig(config),
		options:  options,
		ttl:      ttl,
		sessions: newSessionCache(maxSessions, maxSessionsPerUser),
		refused:  cache.NewLRUExpireCache(maxRefused),
		reviews:  rate.NewLimiter(rate.Limit(limit.PerSecond), limit.Burst),
		limit:    limit,
	}
}

// Session returns the session of the credentials of an Authorization header (Parse): a client
// with them, and the identity that a SelfSubjectReview made with that client reports. It
// returns CF's errors: NotAuthenticated without credentials; InvalidAuthToken for credentials
// that cannot be read or that the apiserver rejects; RateLimitExceeded for credentials it has
// not decided on, past the review limit.
func (a *Authenticator) Session(ctx context.Context, header string) (*Session, error) {
	creds, err := read(header)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if s := a.sessions.get(creds.key, now); s != nil {
		return s, nil
	}
	if refusal, ok := a.refused.Get(creds.key); ok {
		return nil, refusal.(*cferror.Error)
	}
	if !a.reviews.AllowN(now, 1) {
		return nil, cferror.RateLimitExceeded(fmt.Sprintf("The CF API reviews at most %g credentials a second that it has not seen lately, "+
			"and more are waiting: try again in a second", a.limit.PerSecond), reviewRetry)
	}
	s, err := a.review(ctx, header)
	var refusal *cferror.Error
	if errors.As(err, &refusal) && refusal.Status == http.StatusUnauthorized {
		a.refused.Add(creds.key, refusal, refusedFor)
	}
	if err != nil {
		return nil, err
	}
	a.sessions.add(creds.key, s, now.Add(a.ttl))
	return s, nil
}

// review reads the credentials of a header whole (Parse: a client certificate's pair is
// checked), and asks the apiserver who they are.
func (a *Authenticator) review(ctx context.Context, header string) (*Session, error) {
	creds, err := Parse(header)
	if err != nil {
		return nil, err
	}
	config := rest.CopyConfig(a.base)
	config.BearerToken = creds.token
	config.CertData, config.KeyData = creds.certPEM, creds.keyPEM
	c, err := client.New(config, a.options)
	if err != nil {
		return nil, fmt.Errorf("client for the user's credentials: %w", err)
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		if apierrors.IsUnauthorized(err) {
			return nil, cferror.InvalidAuthToken("Invalid Auth Token: the Kubernetes API server does not accept these credentials")
		}
		return nil, fmt.Errorf("SelfSubjectReview: %w", err)
	}
	user := review.Status.UserInfo
	return &Session{Identity: Identity{Name: user.Username, Kind: kindOf(user.Username), Groups: user.Groups}, Client: c}, nil
}

func kindOf(username string) string {
	if strings.HasPrefix(username, cf.ServiceAccountPrefix) {
		return ServiceAccountKind
	}
	return UserKind
}
