package secproc

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"
)

// maxFingerprints bounds the secrets remembered per session.
const maxFingerprints = 32

// sessionTable remembers which sessions read sensitive data, for
// read-then-send. It is an LRU bounded by max entries, and an entry
// expires ttl after it was last tainted.
//
// mu guards m and lru; nothing else is taken while holding it.
type sessionTable struct {
	max int
	ttl time.Duration
	now func() time.Time

	mu  sync.Mutex
	m   map[string]*list.Element // of *sessionState
	lru *list.List               // front: most recently used
}

type sessionState struct {
	key     string
	tainted time.Time
	reason  string
	// fps are fingerprints of the secrets the session saw: the first 8
	// bytes of their SHA-256, never the secrets themselves.
	fps []uint64
}

func newSessionTable(max int, ttl time.Duration, now func() time.Time) *sessionTable {
	return &sessionTable{max: max, ttl: ttl, now: now, m: map[string]*list.Element{}, lru: list.New()}
}

// sessionKey identifies the session of ev. Session ids are unique across
// upstreams; a session without one (stdio) is keyed by its upstream.
func sessionKey(ev Event) string {
	if ev.Session != "" {
		return "s\x00" + ev.Session
	}
	return "u\x00" + ev.Upstream
}

func fingerprint(secret string) uint64 {
	h := sha256.Sum256([]byte(secret))
	return binary.BigEndian.Uint64(h[:8])
}

// taint marks ev's session as having read sensitive data, and remembers
// secret's fingerprint if secret is not "".
func (t *sessionTable) taint(ev Event, reason, secret string) {
	key := sessionKey(ev)
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	var st *sessionState
	if e, ok := t.m[key]; ok {
		st = e.Value.(*sessionState)
		t.lru.MoveToFront(e)
		if now.Sub(st.tainted) > t.ttl {
			st.fps, st.reason = nil, ""
		}
	} else {
		st = &sessionState{key: key}
		t.m[key] = t.lru.PushFront(st)
		for t.lru.Len() > t.max {
			old := t.lru.Back()
			t.lru.Remove(old)
			delete(t.m, old.Value.(*sessionState).key)
		}
	}
	st.tainted = now
	if st.reason == "" {
		st.reason = reason
	}
	if secret != "" {
		fp := fingerprint(secret)
		for _, f := range st.fps {
			if f == fp {
				return
			}
		}
		if len(st.fps) == maxFingerprints {
			st.fps = st.fps[1:]
		}
		st.fps = append(st.fps, fp)
	}
}

// lookup returns why ev's session is tainted and the fingerprints of the
// secrets it saw; ok is false if it is not tainted (or no longer).
func (t *sessionTable) lookup(ev Event) (reason string, fps []uint64, ok bool) {
	key := sessionKey(ev)
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	e, found := t.m[key]
	if !found {
		return "", nil, false
	}
	st := e.Value.(*sessionState)
	if now.Sub(st.tainted) > t.ttl {
		t.lru.Remove(e)
		delete(t.m, key)
		return "", nil, false
	}
	t.lru.MoveToFront(e)
	return st.reason, append([]uint64(nil), st.fps...), true
}

// len returns the number of sessions remembered.
func (t *sessionTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lru.Len()
}
