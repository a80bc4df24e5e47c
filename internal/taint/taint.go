// Package taint tracks untrusted content across protocols (AgentRFC CS,
// composition safety). What a tool or an agent answered is untrusted: a
// model that reads it can be steered by it. The gateway shows the tracker
// every answer (Observe), and asks it, before a consequential request leaves
// (a higher-tier tool call, an A2A delegation), whether the request carries
// a run of text copied from such an answer (Check).
//
//	answer ─► strings ─► normalize ─► k-gram hashes ─► winnow ─► scope index
//	request ─► strings ─► normalize ─► every k-gram hash ─► lookup ─► Match
//
// Normalizing keeps letters and digits only, lower-cased, so that a copy
// survives re-punctuation, re-spacing and case changes. A k-gram is K
// normalized characters (Config.MinMatch); a hit means the request and an
// answer share at least K characters. Answers are winnowed (Schleimer,
// Wilkerson and Aiken, SIGMOD 2003): of every W consecutive k-gram hashes
// only the smallest is kept, which bounds memory and still guarantees that
// any shared run of K+W-1 characters is found (shorter runs of at least K
// usually are). Requests are not winnowed: every k-gram is looked up.
//
// Hashes are polynomial hashes modulo the Mersenne prime 2^61-1 with a
// random base chosen per Tracker, so that an attacker can neither predict
// collisions nor craft the strings that collide modulo 2^64.
//
// Text the request of an answer itself carried is not tainted by the
// answer that echoes it (Observe's echo argument): what the agent sent a
// tool came from the agent, not from the tool.
//
// Scope: content is tracked per scope, the principal the gateway
// authenticated. Without authentication every client shares one scope,
// which errs on the side of asking.
//
// Bounds: at most Config.MaxFingerprints fingerprints in all, the least
// recently used scopes evicted first; observations older than Config.TTL
// are forgotten; each answer contributes at most maxPerAnswer fingerprints
// (its first strings), and each request is checked over its first
// maxCheckBytes of text. Eviction forgets taint (fails open on that
// content), so the bounds are set to hold an agent's working set: see
// docs/principles.md.
package taint

import (
	"container/list"
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"sync"
	"time"
)

// Source says where tracked content came from.
type Source struct {
	Protocol string // "mcp" or "a2a"
	Upstream string // the upstream's name
	Op       string // the MCP tool, or the method ("resources/read", "SendMessage")
	// Tier is the zero-trust tier of the call that produced the answer
	// (0: unclassified). A tool call of a higher tier may not use it.
	Tier    int
	AuditID string // the audit record of the answer, when known
	At      time.Time
}

// Match is one run of a checked request that was copied from an answer.
type Match struct {
	Source  Source
	Path    string // JSON path of the string in the checked value, "$.body"
	Excerpt string // the matched text as the request has it, at most 80 bytes
}

// Config bounds a Tracker. Zero values take the defaults.
type Config struct {
	// MinMatch is the shortest copied run that counts, in normalized
	// characters (letters and digits); default 32.
	MinMatch int
	// Window is the winnowing window; default 8. Runs of MinMatch+Window-1
	// normalized characters are always found.
	Window int
	// MaxFingerprints bounds memory: fingerprints kept over all scopes;
	// default 1<<20 (some tens of MiB).
	MaxFingerprints int
	// TTL is how long an answer taints; default one hour.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Defaults.
const (
	DefaultMinMatch        = 32
	DefaultWindow          = 8
	DefaultMaxFingerprints = 1 << 20
	DefaultTTL             = time.Hour

	maxPerAnswer  = 1 << 16 // fingerprints one answer may add
	maxCheckBytes = 1 << 20 // text of one request that is checked
	excerptBytes  = 80
)

// Tracker holds the fingerprints of the answers it was shown. It is safe
// for concurrent use.
type Tracker struct {
	k, w  int
	ttl   time.Duration
	max   int
	now   func() time.Time
	base  uint64 // hash base, random in [2^32, p)
	powK1 uint64 // base^(k-1) mod p

	mu     sync.Mutex
	scopes map[string]*list.Element // of *scope, most recently used first
	lru    *list.List
	total  int // fingerprints over all scopes
}

// scope is one principal's tracked content.
type scope struct {
	name    string
	fps     map[uint64]int32 // fingerprint → index in obs of its latest answer
	obs     []Source
	updated time.Time
}

// New returns a Tracker bounded by cfg.
func New(cfg Config) *Tracker {
	t := &Tracker{k: cfg.MinMatch, w: cfg.Window, ttl: cfg.TTL, max: cfg.MaxFingerprints, now: cfg.Now,
		scopes: map[string]*list.Element{}, lru: list.New()}
	if t.k <= 0 {
		t.k = DefaultMinMatch
	}
	if t.w <= 0 {
		t.w = DefaultWindow
	}
	if t.max <= 0 {
		t.max = DefaultMaxFingerprints
	}
	if t.ttl <= 0 {
		t.ttl = DefaultTTL
	}
	if t.now == nil {
		t.now = time.Now
	}
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		panic("taint: no randomness: " + err.Error()) // crypto/rand does not fail on supported platforms
	}
	t.base = binary.LittleEndian.Uint64(seed[:])%(mersenne-(1<<32)) + 1<<32
	t.powK1 = 1
	for range t.k - 1 {
		t.powK1 = mulmod(t.powK1, t.base)
	}
	return t
}

// Observe records the strings of the JSON value content (an answer) as
// untrusted, from src, in the named scope. Runs that the JSON value echo (the request
// that produced the answer) also carries are not recorded. Content that is
// not JSON is treated as one string.
func (t *Tracker) Observe(name string, src Source, content, echo []byte) {
	var skip map[uint64]struct{}
	if len(echo) > 0 {
		skip = map[uint64]struct{}{}
		budget := maxCheckBytes
		walkStrings(echo, func(_ string, s string) bool {
			for _, h := range t.grams(normalize(s, &budget).text) {
				skip[h] = struct{}{}
			}
			return budget > 0
		})
	}
	var fps []uint64
	budget := maxCheckBytes
	walkStrings(content, func(_ string, s string) bool {
		for _, h := range t.winnow(t.grams(normalize(s, &budget).text)) {
			if _, echoed := skip[h]; !echoed {
				fps = append(fps, h)
			}
		}
		return len(fps) < maxPerAnswer && budget > 0
	})
	if len(fps) > maxPerAnswer {
		fps = fps[:maxPerAnswer]
	}
	if len(fps) == 0 {
		return
	}
	if src.At.IsZero() {
		src.At = t.now()
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	sc := t.scope(name, true)
	sc.updated = src.At
	idx := int32(len(sc.obs))
	sc.obs = append(sc.obs, src)
	for _, h := range fps {
		if _, seen := sc.fps[h]; !seen {
			t.total++
		}
		sc.fps[h] = idx
	}
	t.evict()
}

// Check returns the runs of the JSON value v (a request's parameters)
// that were copied from an answer observed in the named scope, at most one per string
// and per source, oldest strings first. accept, if not nil, filters the
// sources that count (for instance, only those of a lower tier).
func (t *Tracker) Check(name string, v []byte, accept func(Source) bool) []Match {
	t.mu.Lock()
	el, ok := t.scopes[name]
	if ok {
		t.lru.MoveToFront(el)
	}
	t.mu.Unlock()
	if !ok {
		return nil
	}
	sc := el.Value.(*scope)
	cutoff := t.now().Add(-t.ttl)
	var out []Match
	budget := maxCheckBytes
	walkStrings(v, func(path, s string) bool {
		n := normalize(s, &budget)
		hs := t.grams(n.text)
		seen := map[int32]bool{}
		t.mu.Lock()
		for i, h := range hs {
			idx, hit := sc.fps[h]
			if !hit || seen[idx] {
				continue
			}
			seen[idx] = true
			src := sc.obs[idx]
			if src.At.Before(cutoff) || (accept != nil && !accept(src)) {
				continue
			}
			out = append(out, Match{Source: src, Path: path, Excerpt: n.excerpt(s, i, t.k)})
		}
		t.mu.Unlock()
		return budget > 0
	})
	return out
}

// Forget drops what the named scope's answers tainted (the session or principal is
// gone).
func (t *Tracker) Forget(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.scopes[name]; ok {
		t.drop(el)
	}
}

// Len reports the fingerprints held over all scopes.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// scope returns the named scope, created if create; called with mu held.
func (t *Tracker) scope(name string, create bool) *scope {
	if el, ok := t.scopes[name]; ok {
		t.lru.MoveToFront(el)
		sc := el.Value.(*scope)
		if t.now().Sub(sc.updated) > t.ttl { // everything in it expired
			t.total -= len(sc.fps)
			sc.fps, sc.obs = map[uint64]int32{}, nil
		}
		return sc
	}
	if !create {
		return nil
	}
	sc := &scope{name: name, fps: map[uint64]int32{}}
	t.scopes[name] = t.lru.PushFront(sc)
	return sc
}

// evict drops least recently used scopes until the total is within
// bounds; the most recent scope is cut to the bound on its own.
func (t *Tracker) evict() {
	for t.total > t.max && t.lru.Len() > 1 {
		t.drop(t.lru.Back())
	}
	if t.total > t.max { // one scope alone is over: start it afresh
		t.drop(t.lru.Front())
	}
}

func (t *Tracker) drop(el *list.Element) {
	sc := el.Value.(*scope)
	t.total -= len(sc.fps)
	t.lru.Remove(el)
	delete(t.scopes, sc.name)
}

// The hash: polynomial over runes modulo the Mersenne prime 2^61-1.
const mersenne = 1<<61 - 1

func mulmod(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	// a*b = hi*2^64 + lo; reduce modulo 2^61-1 using 2^61 ≡ 1.
	r := (hi<<3 | lo>>61) + (lo & mersenne)
	if r >= mersenne {
		r -= mersenne
	}
	return r
}

// grams returns the hash of every k-gram of s, in order.
func (t *Tracker) grams(s []rune) []uint64 {
	if len(s) < t.k {
		return nil
	}
	out := make([]uint64, 0, len(s)-t.k+1)
	var h uint64
	for i, r := range s {
		if i >= t.k { // drop s[i-k]
			h = (h + mersenne - mulmod(uint64(s[i-t.k])+1, t.powK1)) % mersenne
		}
		h = (mulmod(h, t.base) + uint64(r) + 1) % mersenne
		if i >= t.k-1 {
			out = append(out, h)
		}
	}
	return out
}

// winnow keeps the smallest hash of every window of w consecutive hashes
// (the rightmost of equals), each once.
func (t *Tracker) winnow(hs []uint64) []uint64 {
	if len(hs) <= t.w {
		if len(hs) == 0 {
			return nil
		}
		return []uint64{hs[minIndex(hs)]}
	}
	var out []uint64
	last := -1
	for start := 0; start+t.w <= len(hs); start++ {
		i := start + minIndex(hs[start:start+t.w])
		if i != last {
			out = append(out, hs[i])
			last = i
		}
	}
	return out
}

// minIndex returns the index of the smallest of hs, the rightmost of equals.
func minIndex(hs []uint64) int {
	m := 0
	for i, h := range hs {
		if h <= hs[m] {
			m = i
		}
	}
	return m
}
