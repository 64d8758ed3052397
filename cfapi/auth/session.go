package auth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// maxSessions bounds the remembered sessions; past it they are all forgotten at once.
const maxSessions = 1024

// Authenticator makes sessions from credentials, and remembers each for a short while so that
// the cf CLI's several requests per command cost the kube-apiserver one review.
type Authenticator struct {
	base    *rest.Config
	options client.Options
	ttl     time.Duration
	now     func() time.Time

	mu       sync.Mutex
	sessions map[[sha256.Size]byte]remembered
}

type remembered struct {
	session *Session
	until   time.Time
}

// NewAuthenticator returns an Authenticator whose clients reach the kube-apiserver of config
// (its address and CA, never its credentials) with options' scheme and RESTMapper, and that
// remembers a session for ttl: a user whose credentials are revoked keeps the identity that
// long, while every read and write still goes to the apiserver with the credentials.
func NewAuthenticator(config *rest.Config, options client.Options, ttl time.Duration) *Authenticator {
	return &Authenticator{
		base:     rest.AnonymousClientConfig(config),
		options:  options,
		ttl:      ttl,
		now:      time.Now,
		sessions: map[[sha256.Size]byte]remembered{},
	}
}

// Session returns the session of creds: a client with them, and the identity that a
// SelfSubjectReview made with that client reports. Credentials that the apiserver rejects give
// CF's InvalidAuthToken.
func (a *Authenticator) Session(ctx context.Context, creds Credentials) (*Session, error) {
	if s := a.remembered(creds.key); s != nil {
		return s, nil
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
	s := &Session{Identity: Identity{Name: user.Username, Kind: kindOf(user.Username), Groups: user.Groups}, Client: c}
	a.remember(creds.key, s)
	return s, nil
}

func kindOf(username string) string {
	if strings.HasPrefix(username, cf.ServiceAccountPrefix) {
		return ServiceAccountKind
	}
	return UserKind
}

func (a *Authenticator) remembered(key [sha256.Size]byte) *Session {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.sessions[key]
	if !ok || !a.now().Before(r.until) {
		delete(a.sessions, key)
		return nil
	}
	return r.session
}

func (a *Authenticator) remember(key [sha256.Size]byte, s *Session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.sessions) >= maxSessions {
		clear(a.sessions)
	}
	a.sessions[key] = remembered{session: s, until: a.now().Add(a.ttl)}
}
