package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"

	"github.com/atmostonce/toolexec/internal/tokenfile"
)

// Bounds of the sessions: a session is an operator's credential, so it
// ends after sessionIdle without a request and sessionMax after sign-in,
// whichever comes first; at most maxSessions live at once (the least
// recently used goes first).
const (
	sessionIdle = time.Hour
	sessionMax  = 12 * time.Hour
	maxSessions = 1024
)

// session is one operator's sign-in. Its token's hash is kept, not the
// token, so that a reload of the operators file that drops the token ends
// the session (OperatorStore.Current().Holds).
type session struct {
	id       string
	operator string
	token    tokenfile.Hash
	csrf     string // every form that changes something carries it
	created  time.Time
	seen     time.Time
}

// sessions holds the live sessions in memory: a restart signs everyone
// out. Safe for concurrent use.
type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
}

func newSessions() *sessions { return &sessions{byID: map[string]*session{}} }

// start makes a session for operator, evicting the least recently used
// one when full.
func (s *sessions) start(operator string, token tokenfile.Hash, now time.Time) *session {
	ss := &session{id: randomToken(), operator: operator, token: token, csrf: randomToken(), created: now, seen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byID) >= maxSessions {
		s.evictLocked(now)
	}
	s.byID[ss.id] = ss
	return ss
}

// evictLocked drops expired sessions, and the least recently used one if
// none had expired.
func (s *sessions) evictLocked(now time.Time) {
	var lru *session
	for id, ss := range s.byID {
		if ss.expired(now) {
			delete(s.byID, id)
			continue
		}
		if lru == nil || ss.seen.Before(lru.seen) {
			lru = ss
		}
	}
	if len(s.byID) >= maxSessions && lru != nil {
		delete(s.byID, lru.id)
	}
}

// get returns the live session of id, and marks it used; nil when there
// is none or it expired (then it is dropped).
func (s *sessions) get(id string, now time.Time) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.byID[id]
	if !ok {
		return nil
	}
	if ss.expired(now) {
		delete(s.byID, id)
		return nil
	}
	ss.seen = now
	cp := *ss
	return &cp
}

func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
}

func (ss *session) expired(now time.Time) bool {
	return now.Sub(ss.seen) > sessionIdle || now.Sub(ss.created) > sessionMax
}

// csrfOK compares a form's CSRF token with the session's in constant time.
func (ss *session) csrfOK(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(ss.csrf)) == 1
}

// randomToken is 32 random bytes, URL-safe: a session id or a CSRF token.
func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("console: no randomness: " + err.Error()) // crypto/rand does not fail on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
