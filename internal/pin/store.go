package pin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Store keeps pins and pending definitions, keyed by (upstream, tool).
// Implementations are safe for concurrent use; the persistent one
// ([SQLite]) is safe for several processes on one file (a gateway and
// `warden manifest pins approve`). Every method that writes is atomic.
//
// An error means the store could not decide; callers block the tools
// concerned (fail-secure).
type Store interface {
	// Pins returns the pins of upstream, or of every upstream when
	// upstream is "", ordered by upstream then tool.
	Pins(ctx context.Context, upstream string) ([]Record, error)
	// PinFirst stores r unless a pin for (r.Upstream, r.Tool) exists, and
	// returns the pin stored afterwards and whether it is r.
	PinFirst(ctx context.Context, r Record) (stored Record, inserted bool, err error)
	// SetPin stores r, replacing any pin of (r.Upstream, r.Tool).
	SetPin(ctx context.Context, r Record) error
	// DeletePin removes the pin of (upstream, tool), if any.
	DeletePin(ctx context.Context, upstream, tool string) error

	// Hold records p as the definition of (p.Upstream, p.Tool) waiting
	// for a person, and returns what is stored afterwards: when a pending
	// entry with the same NewHash exists it is kept as it is (its Seen and
	// its rejection), otherwise p replaces it.
	Hold(ctx context.Context, p Pending) (Pending, error)
	// Pendings returns the pending definitions of upstream, or of every
	// upstream when upstream is "", rejected ones included, ordered by
	// upstream then tool.
	Pendings(ctx context.Context, upstream string) ([]Pending, error)
	// DropPending removes the pending definition of (upstream, tool), if
	// any (the server went back to the pinned one).
	DropPending(ctx context.Context, upstream, tool string) error
	// Approve pins the pending definition of (upstream, tool) if its
	// NewHash is hash, with SourceApproved, approver and at, and removes
	// it from the pending ones, in one transaction. It returns
	// ErrNoPending or ErrHashMismatch otherwise.
	Approve(ctx context.Context, upstream, tool, hash, approver string, at time.Time) (Record, error)
	// Reject marks the pending definition of (upstream, tool) rejected if
	// its NewHash is hash. The pin is unchanged.
	Reject(ctx context.Context, upstream, tool, hash, approver string, at time.Time) (Pending, error)

	// Close releases the store. Other methods then return ErrClosed.
	Close() error
}

// Shared is a Store that several gateways write at the same time (Redis).
// Changed receives a value after another writer may have changed the pins or
// the pending definitions; values are coalesced (the channel holds at most
// one), and the channel is closed when the store is closed.
//
// A Pinner on a Shared store reloads its copy at each value, and looks a
// tool it has no entry for up in the store before refusing a call to it: a
// tool pinned through one gateway may be called through another at once.
type Shared interface {
	Store
	Changed() <-chan struct{}
}

// key is (upstream, tool).
type key struct{ upstream, tool string }

// Memory is a Store in memory, lost when the process ends.
type Memory struct {
	mu      sync.Mutex
	pins    map[key]Record  // guarded by mu
	pending map[key]Pending // guarded by mu
	closed  bool            // guarded by mu
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty memory store.
func NewMemory() *Memory {
	return &Memory{pins: map[key]Record{}, pending: map[key]Pending{}}
}

// lock takes m.mu and checks ctx and Close; on error the lock is released.
func (m *Memory) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// Pins implements Store.
func (m *Memory) Pins(ctx context.Context, upstream string) ([]Record, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []Record
	for k, r := range m.pins {
		if upstream == "" || k.upstream == upstream {
			out = append(out, cloneRecord(r))
		}
	}
	sortRecords(out)
	return out, nil
}

// PinFirst implements Store.
func (m *Memory) PinFirst(ctx context.Context, r Record) (Record, bool, error) {
	if err := checkRecord(r); err != nil {
		return Record{}, false, err
	}
	if err := m.lock(ctx); err != nil {
		return Record{}, false, err
	}
	defer m.mu.Unlock()
	k := key{r.Upstream, r.Tool}
	if old, ok := m.pins[k]; ok {
		return cloneRecord(old), false, nil
	}
	m.pins[k] = cloneRecord(r)
	return cloneRecord(r), true, nil
}

// SetPin implements Store.
func (m *Memory) SetPin(ctx context.Context, r Record) error {
	if err := checkRecord(r); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.pins[key{r.Upstream, r.Tool}] = cloneRecord(r)
	return nil
}

// DeletePin implements Store.
func (m *Memory) DeletePin(ctx context.Context, upstream, tool string) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	delete(m.pins, key{upstream, tool})
	return nil
}

// Hold implements Store.
func (m *Memory) Hold(ctx context.Context, p Pending) (Pending, error) {
	if err := checkPending(p); err != nil {
		return Pending{}, err
	}
	if err := m.lock(ctx); err != nil {
		return Pending{}, err
	}
	defer m.mu.Unlock()
	k := key{p.Upstream, p.Tool}
	if old, ok := m.pending[k]; ok && old.NewHash == p.NewHash {
		return clonePending(old), nil
	}
	m.pending[k] = clonePending(p)
	return clonePending(p), nil
}

// Pendings implements Store.
func (m *Memory) Pendings(ctx context.Context, upstream string) ([]Pending, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []Pending
	for k, p := range m.pending {
		if upstream == "" || k.upstream == upstream {
			out = append(out, clonePending(p))
		}
	}
	sortPendings(out)
	return out, nil
}

// DropPending implements Store.
func (m *Memory) DropPending(ctx context.Context, upstream, tool string) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	delete(m.pending, key{upstream, tool})
	return nil
}

// Approve implements Store.
func (m *Memory) Approve(ctx context.Context, upstream, tool, hash, approver string, at time.Time) (Record, error) {
	if strings.TrimSpace(approver) == "" {
		return Record{}, ErrApprover
	}
	if err := m.lock(ctx); err != nil {
		return Record{}, err
	}
	defer m.mu.Unlock()
	k := key{upstream, tool}
	p, ok := m.pending[k]
	if !ok {
		return Record{}, ErrNoPending
	}
	if p.NewHash != hash {
		return Record{}, fmt.Errorf("%w: %s waits with %s", ErrHashMismatch, tool, p.NewHash)
	}
	r := Record{Upstream: upstream, Tool: tool, Hash: p.NewHash, Definition: p.New,
		Source: SourceApproved, Approver: approver, At: at}
	m.pins[k] = cloneRecord(r)
	delete(m.pending, k)
	return cloneRecord(r), nil
}

// Reject implements Store.
func (m *Memory) Reject(ctx context.Context, upstream, tool, hash, approver string, at time.Time) (Pending, error) {
	if strings.TrimSpace(approver) == "" {
		return Pending{}, ErrApprover
	}
	if err := m.lock(ctx); err != nil {
		return Pending{}, err
	}
	defer m.mu.Unlock()
	k := key{upstream, tool}
	p, ok := m.pending[k]
	if !ok {
		return Pending{}, ErrNoPending
	}
	if p.NewHash != hash {
		return Pending{}, fmt.Errorf("%w: %s waits with %s", ErrHashMismatch, tool, p.NewHash)
	}
	p.Rejected, p.Decider, p.Decided = true, approver, at
	m.pending[k] = p
	return clonePending(p), nil
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return nil
}

func checkRecord(r Record) error {
	if r.Upstream == "" || r.Tool == "" {
		return fmt.Errorf("pin: record without upstream or tool (%q, %q)", r.Upstream, r.Tool)
	}
	if !isHash(r.Hash) {
		return fmt.Errorf("pin: record %s/%s: hash %q is not 64 lowercase hex digits", r.Upstream, r.Tool, r.Hash)
	}
	switch r.Source {
	case SourceFirstUse, SourceManifest, SourceApproved:
	default:
		return fmt.Errorf("pin: record %s/%s: unknown source %q", r.Upstream, r.Tool, r.Source)
	}
	return nil
}

func checkPending(p Pending) error {
	if p.Upstream == "" || p.Tool == "" {
		return fmt.Errorf("pin: pending without upstream or tool (%q, %q)", p.Upstream, p.Tool)
	}
	if !isHash(p.NewHash) || (p.OldHash != "" && !isHash(p.OldHash)) {
		return fmt.Errorf("pin: pending %s/%s: malformed hash", p.Upstream, p.Tool)
	}
	switch p.Kind {
	case KindChanged, KindNew, KindUnpinned:
	default:
		return fmt.Errorf("pin: pending %s/%s: kind %q cannot wait for approval", p.Upstream, p.Tool, p.Kind)
	}
	return nil
}

func cloneRecord(r Record) Record {
	r.Definition = slices.Clone(r.Definition)
	return r
}

func clonePending(p Pending) Pending {
	p.Old, p.New = slices.Clone(p.Old), slices.Clone(p.New)
	return p
}

func sortRecords(rs []Record) {
	slices.SortFunc(rs, func(a, b Record) int {
		if c := strings.Compare(a.Upstream, b.Upstream); c != 0 {
			return c
		}
		return strings.Compare(a.Tool, b.Tool)
	})
}

func sortPendings(ps []Pending) {
	slices.SortFunc(ps, func(a, b Pending) int {
		if c := strings.Compare(a.Upstream, b.Upstream); c != 0 {
			return c
		}
		return strings.Compare(a.Tool, b.Tool)
	})
}
