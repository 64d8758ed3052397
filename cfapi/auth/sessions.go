package auth

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// The sessions remembered: any authenticated user could otherwise fill the cache with sessions
// of their own (a header spelled anew, tokens minted for their ServiceAccounts) and make every
// other user's next request cost a review (review 3, N18). Headers are keyed as their
// credentials, however they are spelled (Credentials), the least recently used session is
// forgotten first, and one user keeps at most maxSessionsPerUser, their own least recently used
// going first.
const (
	maxSessions        = 4096
	maxSessionsPerUser = 8
)

// sessionCache remembers sessions by credentials until they expire.
type sessionCache struct {
	max, perUser int

	mu sync.Mutex
	// lru holds *sessionEntry, the most recently used first.
	lru    list.List
	byKey  map[[sha256.Size]byte]*list.Element
	ofUser map[string]int
}

type sessionEntry struct {
	key     [sha256.Size]byte
	session *Session
	until   time.Time
}

func newSessionCache(maxEntries, perUser int) *sessionCache {
	return &sessionCache{max: maxEntries, perUser: perUser, byKey: map[[sha256.Size]byte]*list.Element{}, ofUser: map[string]int{}}
}

// get returns the session of key if it is remembered and has not expired at now.
func (c *sessionCache) get(key [sha256.Size]byte, now time.Time) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return nil
	}
	if entry := e.Value.(*sessionEntry); now.Before(entry.until) {
		c.lru.MoveToFront(e)
		return entry.session
	}
	c.remove(e)
	return nil
}

// add remembers the session of key until until, forgetting the user's least recently used
// session if they have perUser already, and the least recently used of all if the cache is full.
func (c *sessionCache) add(key [sha256.Size]byte, s *Session, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.remove(e)
	}
	if c.ofUser[s.Identity.Name] >= c.perUser {
		c.remove(c.leastRecentOf(s.Identity.Name))
	}
	if c.lru.Len() >= c.max {
		c.remove(c.lru.Back())
	}
	c.byKey[key] = c.lru.PushFront(&sessionEntry{key: key, session: s, until: until})
	c.ofUser[s.Identity.Name]++
}

// leastRecentOf is the user's least recently used session; the user has one.
func (c *sessionCache) leastRecentOf(name string) *list.Element {
	e := c.lru.Back()
	for e.Value.(*sessionEntry).session.Identity.Name != name {
		e = e.Prev()
	}
	return e
}

func (c *sessionCache) remove(e *list.Element) {
	entry := c.lru.Remove(e).(*sessionEntry)
	delete(c.byKey, entry.key)
	if c.ofUser[entry.session.Identity.Name]--; c.ofUser[entry.session.Identity.Name] == 0 {
		delete(c.ofUser, entry.session.Identity.Name)
	}
}
