package cfapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/cache"

	"code.cloudfoundry.org/cf-hnc/cfapi/cferror"
)

// What one API replica has that any authenticated user could take from the others (review 3,
// N7 and N18): the requests that cost it most while they run (a list read as the user across
// spaces holds its page and a chunk of objects; an upload a connection, scratch space and a
// conversion), and the reads it makes with its own rights for a user (stacks and buildpacks, a
// deletion's progress), which share its client's budget of requests to the apiserver. Each is
// bounded per replica and per user.

// slots bounds the requests of a kind that a replica serves at once, and one user's share of
// them: half of them (at least one), so that one user never holds them all.
type slots struct {
	// kind names the requests in answers: "lists", "uploads".
	kind        string
	free        chan struct{}
	perIdentity int
	// wait is how long a request waits for a slot that another user holds.
	wait time.Duration

	mu   sync.Mutex
	held map[string]int
}

// slotWait is how long a request waits for a free slot before it is answered 503: long enough
// for a list to end, short of the cf CLI's patience. The cf CLI retries a GET that gets 503.
const slotWait = 10 * time.Second

// slotRetry is when a request turned away for want of a slot may try again.
const slotRetry = 5 * time.Second

func newSlots(kind string, n int) *slots {
	return &slots{kind: kind, free: make(chan struct{}, n), perIdentity: max(1, n/2), wait: slotWait, held: map[string]int{}}
}

// take takes a slot for a user, waiting at most s.wait for one; release gives it back. A user
// who holds their share already is refused at once.
func (s *slots) take(ctx context.Context, identity string) (release func(), err error) {
	s.mu.Lock()
	if s.held[identity] >= s.perIdentity {
		s.mu.Unlock()
		return nil, cferror.RateLimitExceeded(fmt.Sprintf("You have %d %s in progress on this replica of the CF API, as many as one user may: "+
			"try again when one has ended", s.perIdentity, s.kind), slotRetry)
	}
	s.held[identity]++
	s.mu.Unlock()
	timer := time.NewTimer(s.wait)
	defer timer.Stop()
	select {
	case s.free <- struct{}{}:
		return func() {
			<-s.free
			s.drop(identity)
		}, nil
	case <-timer.C:
		s.drop(identity)
		busy := cferror.ServiceUnavailable(fmt.Sprintf("This replica of the CF API serves %d %s at once, and none ended within %s: try again later",
			cap(s.free), s.kind, s.wait))
		busy.RetryAfter = slotRetry
		return nil, busy
	case <-ctx.Done():
		s.drop(identity)
		return nil, ctx.Err()
	}
}

func (s *slots) drop(identity string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[identity]--; s.held[identity] <= 0 {
		delete(s.held, identity)
	}
}

// limited serves h only once the request's user has a slot of s.
func (s *server) limited(slots *slots, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		release, err := slots.take(r.Context(), sessionOf(r).Identity.Name)
		if err != nil {
			return err
		}
		defer release()
		return h(w, r)
	}
}

// The reads that the API makes with its own rights for a user: each user may make
// ownReadsPerSecond of them, in bursts of ownReadBurst. The cf CLI makes a few per command (it
// polls a deletion's job every 3 s, so an operator's script may delete a dozen orgs at once);
// the users remembered are bounded, the least recently seen forgotten first.
const (
	ownReadsPerSecond = 5
	ownReadBurst      = 20
	ownReadUsers      = 4096
	ownReadForget     = 10 * time.Minute
)

// ownReads rate-limits per user the reads made with the API's own rights.
type ownReads struct {
	limiters *cache.LRUExpireCache
}

func newOwnReads() *ownReads {
	return &ownReads{limiters: cache.NewLRUExpireCache(ownReadUsers)}
}

// allow takes a read of the user's share, or refuses it with CF's RateLimitExceeded.
func (o *ownReads) allow(identity string) error {
	limiter, ok := o.limiters.Get(identity)
	if !ok {
		limiter = rate.NewLimiter(ownReadsPerSecond, ownReadBurst)
	}
	o.limiters.Add(identity, limiter, ownReadForget)
	if !limiter.(*rate.Limiter).Allow() {
		return cferror.RateLimitExceeded(fmt.Sprintf("You asked for stacks, buildpacks, droplets or jobs more than %d times a second: "+
			"the CF API reads them with its own rights, which every user shares", ownReadsPerSecond), time.Second)
	}
	return nil
}
