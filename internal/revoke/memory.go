package revoke

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Memory is a Registry in this process: for one gateway, lost when it
// stops (as a memory replay store is, whose new epoch then refuses every
// older token anyway).
type Memory struct {
	mu      sync.Mutex
	entries map[Kind]map[string]Revocation // guarded by mu
	bound   map[string]binding             // jti → session; guarded by mu
	closed  bool                           // guarded by mu
}

// sweepBindings is how many bindings Memory holds before Bind forgets the
// expired ones.
const sweepBindings = 4096

type binding struct {
	session string
	until   time.Time
}

// NewMemory returns an empty registry.
func NewMemory() *Memory {
	return &Memory{entries: map[Kind]map[string]Revocation{}, bound: map[string]binding{}}
}

// Revoke implements Registry.
func (m *Memory) Revoke(ctx context.Context, r Revocation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	r, err := normalize(r, now)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.sweepLocked(now)
	byID := m.entries[r.Kind]
	if byID == nil {
		byID = map[string]Revocation{}
		m.entries[r.Kind] = byID
	}
	if old, ok := byID[r.ID]; ok {
		r = merge(old, r)
	}
	byID[r.ID] = r
	return nil
}

// merge combines two revocations of one id: the later Before and Until win,
// so that revoking again never narrows what was revoked.
func merge(old, r Revocation) Revocation {
	if old.Before.After(r.Before) {
		r.Before = old.Before
	}
	if old.Until.After(r.Until) {
		r.Until = old.Until
	}
	return r
}

// Bind implements Registry.
func (m *Memory) Bind(ctx context.Context, session, jti string, until time.Time) error {
	if err := checkBind(ctx, session, jti, until); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if len(m.bound) >= sweepBindings {
		m.sweepLocked(time.Now())
	}
	m.bound[jti] = binding{session: session, until: until}
	return nil
}

// Check implements Registry.
func (m *Memory) Check(ctx context.Context, t Token) (bool, string, error) {
	if err := checkToken(ctx, t); err != nil {
		return undecided(err)
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return undecided(ErrClosed)
	}
	var bound string
	if b, ok := m.bound[t.ID]; ok && b.until.After(now) {
		bound = b.session
	}
	for _, key := range []struct {
		kind Kind
		id   string
	}{{KindToken, t.ID}, {KindSubject, t.Subject}, {KindSession, t.Session}, {KindSession, bound}} {
		if r, ok := m.entries[key.kind][key.id]; ok && r.Until.After(now) && covers(r, t, bound) {
			return true, reasonOf(r), nil
		}
	}
	return false, "", nil
}

// List implements Registry.
func (m *Memory) List(ctx context.Context) ([]Revocation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	var out []Revocation
	for _, byID := range m.entries {
		for _, r := range byID {
			if r.Until.After(now) {
				out = append(out, r)
			}
		}
	}
	sortNewestFirst(out)
	return out, nil
}

// Close implements Registry.
func (m *Memory) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return nil
}

// sweepLocked forgets what expired. m.mu is held.
func (m *Memory) sweepLocked(now time.Time) {
	for _, byID := range m.entries {
		for id, r := range byID {
			if !r.Until.After(now) {
				delete(byID, id)
			}
		}
	}
	for jti, b := range m.bound {
		if !b.until.After(now) {
			delete(m.bound, jti)
		}
	}
}

func sortNewestFirst(rs []Revocation) {
	sort.Slice(rs, func(i, j int) bool {
		if !rs[i].At.Equal(rs[j].At) {
			return rs[i].At.After(rs[j].At)
		}
		return rs[i].Kind+":"+Kind(rs[i].ID) < rs[j].Kind+":"+Kind(rs[j].ID)
	})
}

// checkBind validates Bind's arguments.
func checkBind(ctx context.Context, session, jti string, until time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if session == "" || jti == "" || len(session) > MaxIDLen || len(jti) > MaxIDLen {
		return ErrInvalid
	}
	if !until.After(time.Now()) {
		return ErrInvalid
	}
	return nil
}
