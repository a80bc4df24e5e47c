package approval

// Where the queue keeps its requests. A Queue holds its waiters (the calls
// blocked in Wait) and its subscribers in process; the requests and their
// decisions live in a Backend, so that with a shared backend a call held on
// one gateway can be decided through another one's admin API:
//
//	instance A                        backend (Redis)                  instance B
//	Submit ── Put ──────────────────► req:<id> (TTL) ◄──── List/Get ── admin API
//	Wait  ◄── wake (event or poll) ── dec:<id>  ◄─── Settle (first wins) ── Decide
//
// Every outcome, the waiter's own timeout or cancellation included, goes
// through Settle, and only the first Settle of a request succeeds: whoever
// settles first owns the outcome, on every instance. An approver is never
// told "approved" for a call that was refused, except when the backend
// becomes unreachable between the decision and the waiter reading it: the
// call is then refused (fail-secure) and the waiter's error says why.

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"time"
)

// ErrSettled is returned by Backend.Settle for a request that already has
// its outcome.
var ErrSettled = errors.New("approval: the request was already decided")

// Backend stores pending requests and their decisions. Implementations are
// safe for concurrent use, and every method's error means the backend could
// not decide: the queue then denies the call it concerns.
type Backend interface {
	// Put stores a new pending request. It stays until Remove, or until
	// some time after p.Expires (a backend may forget it then).
	Put(ctx context.Context, p Pending) error
	// Load returns the request id and, once it is settled, its decision. It
	// returns ErrUnknown for an id it does not hold.
	Load(ctx context.Context, id string) (Pending, *Decision, error)
	// Settle records d as the outcome of id, if check (when not nil) accepts
	// the request. Only the first Settle of a request succeeds; later ones
	// return ErrSettled. An unknown id returns ErrUnknown.
	Settle(ctx context.Context, id string, d Decision, check func(Pending) error) error
	// Vote records v, one approval of the request id by one of the several
	// approvers it needs, if check (when not nil) accepts the request, and
	// returns every vote so far, oldest first. A second vote by the same
	// approver returns ErrSameApprover and changes nothing. A settled
	// request returns ErrSettled, an unknown one ErrUnknown.
	Vote(ctx context.Context, id string, v Vote, check func(Pending) error) ([]Vote, error)
	// Votes returns the votes recorded for id, oldest first.
	Votes(ctx context.Context, id string) ([]Vote, error)
	// Remove forgets id and its decision.
	Remove(ctx context.Context, id string) error
	// List returns the requests that have no outcome yet, in any order.
	List(ctx context.Context) ([]Pending, error)
	// History returns the last HistoryLimit outcomes, newest first.
	History(ctx context.Context) ([]Decided, error)
	// MarkExecuted sets Executed to at on the approved outcome of id in
	// the history, unless it is set already. It returns ErrUnknown when
	// the history holds no approved outcome of id.
	MarkExecuted(ctx context.Context, id string, at time.Time) error
	// Events returns the changes made through other handles on the same
	// storage (other gateway instances), or nil when there can be none. It
	// is best effort: a waiter also polls (Options.Poll).
	Events() <-chan Event
	// Close releases the backend. The methods fail after it.
	Close() error
}

// Event is a change to the shared queue, made by another instance.
type Event struct {
	Kind EventKind
	ID   string
}

// EventKind says what changed.
type EventKind string

// Kinds of Event.
const (
	EventSubmitted EventKind = "submitted"
	EventDecided   EventKind = "decided"
	EventRemoved   EventKind = "removed"
)

// memoryBackend keeps the queue in this process: the default, for one
// gateway instance.
type memoryBackend struct {
	mu      sync.Mutex
	pending map[string]*memEntry // guarded by mu
	history []Decided            // the last HistoryLimit outcomes, oldest first; guarded by mu
	file    *os.File             // the history file (historyfile.go), nil for none; guarded by mu
	closed  bool                 // Close was called on a backend with a file; guarded by mu
}

type memEntry struct {
	p     Pending
	d     *Decision // the outcome, once settled
	votes []Vote    // approvals so far of a request that needs several
}

// NewMemoryBackend returns a backend that keeps requests in memory.
func NewMemoryBackend() Backend { return &memoryBackend{pending: map[string]*memEntry{}} }

func (m *memoryBackend) Put(_ context.Context, p Pending) error {
	m.mu.Lock()
	m.pending[p.ID] = &memEntry{p: p}
	m.mu.Unlock()
	return nil
}

func (m *memoryBackend) Load(_ context.Context, id string) (Pending, *Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pending[id]
	if e == nil {
		return Pending{}, nil, ErrUnknown
	}
	return e.p, e.d, nil
}

func (m *memoryBackend) Settle(_ context.Context, id string, d Decision, check func(Pending) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pending[id]
	switch {
	case e == nil:
		return ErrUnknown
	case e.d != nil:
		return ErrSettled
	}
	if check != nil {
		if err := check(e.p); err != nil {
			return err
		}
	}
	if m.closed {
		return errors.New("approval: backend closed")
	}
	h := Decided{Pending: e.p, Decision: d, At: time.Now()}
	if err := m.appendHistory(h); err != nil {
		return err // not settled: an outcome that cannot be recorded is not taken
	}
	e.d = &d
	if len(m.history) >= HistoryLimit {
		n := copy(m.history, m.history[len(m.history)-HistoryLimit+1:])
		clear(m.history[n:])
		m.history = m.history[:n]
	}
	m.history = append(m.history, h)
	return nil
}

func (m *memoryBackend) Vote(_ context.Context, id string, v Vote, check func(Pending) error) ([]Vote, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pending[id]
	switch {
	case e == nil:
		return nil, ErrUnknown
	case e.d != nil:
		return nil, ErrSettled
	}
	if check != nil {
		if err := check(e.p); err != nil {
			return nil, err
		}
	}
	for _, old := range e.votes {
		if old.Approver == v.Approver {
			return nil, ErrSameApprover
		}
	}
	e.votes = append(e.votes, v)
	return slices.Clone(e.votes), nil
}

func (m *memoryBackend) Votes(_ context.Context, id string) ([]Vote, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pending[id]
	if e == nil {
		return nil, ErrUnknown
	}
	return slices.Clone(e.votes), nil
}

func (m *memoryBackend) Remove(_ context.Context, id string) error {
	m.mu.Lock()
	delete(m.pending, id)
	m.mu.Unlock()
	return nil
}

func (m *memoryBackend) List(context.Context) ([]Pending, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Pending, 0, len(m.pending))
	for _, e := range m.pending {
		if e.d == nil {
			out = append(out, e.p)
		}
	}
	return out, nil
}

func (m *memoryBackend) History(context.Context) ([]Decided, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Decided, len(m.history))
	for i, d := range m.history {
		out[len(out)-1-i] = d
	}
	return out, nil
}

func (m *memoryBackend) MarkExecuted(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.history) - 1; i >= 0; i-- {
		h := &m.history[i]
		switch {
		case h.ID != id:
			continue
		case !h.Approved:
			return ErrUnknown
		case !h.Executed.IsZero():
			return nil
		case m.closed:
			return errors.New("approval: backend closed")
		}
		if err := m.appendExecuted(id, at); err != nil {
			return err
		}
		h.Executed = at
		return nil
	}
	return ErrUnknown
}

func (m *memoryBackend) Events() <-chan Event { return nil }
func (m *memoryBackend) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.file == nil {
		return nil
	}
	m.closed = true
	err := m.file.Close()
	m.file = nil
	return err
}
