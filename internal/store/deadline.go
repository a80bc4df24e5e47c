package store

// Deadlines: a consumption waits for the store for a bounded time, whatever
// the backend does with its context (the SQLite writer deliberately runs
// without a cancellable one, and a Redis server stopped with SIGSTOP keeps
// the connection open and answers nothing).
//
//	Guard.Consume(ctx, st, ns, id, expires, timeout)
//	  ─► (ns, id) undecided here before?     ─► ErrUndecided: it counts as used
//	  ─► too many undecided or waiting?       ─► ErrBusy at once
//	  ─► goroutine: st.Consume(ctx+timeout) ─┐
//	     deadline ───────────────────────────┴─► the first wins
//	         answer in time: the store's answer
//	         deadline first: (ns, id) is remembered as used until expires,
//	                         ErrTimeout; the late answer is dropped unread
//
// Once the deadline passed, nobody can tell whether the store recorded the
// consumption, or will: the request that carried it may still be in a
// socket buffer. The id therefore counts as used on this process whatever
// the store says later, so a late "first use" never turns the refusal into
// an acceptance, and a retry of the same credential is refused here even if
// the store never recorded it. Other processes know only what the store
// recorded: a retry elsewhere is refused when the store's write landed.
//
// The set of undecided ids is bounded (its entries expire with the
// credential, at expires), and so is the number of consumptions waiting for
// the store (each holds a goroutine until the store answers; one that timed
// out and still waits counts as both). When the two together reach the
// bound the guard refuses at once, without asking the store: it fails
// closed rather than forget an undecided id.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults of a Guard's callers and of NewGuard.
const (
	// DefaultTimeout is how long a consumption waits for the store.
	DefaultTimeout = 500 * time.Millisecond
	// DefaultGuardSize bounds the ids a Guard remembers plus the
	// consumptions waiting for the store.
	DefaultGuardSize = 16384
)

var (
	// ErrTimeout is returned when the store did not answer within the
	// deadline: whether the id was consumed is unknown, and the caller must
	// refuse.
	ErrTimeout = errors.New("store: no answer within the deadline")
	// ErrUndecided is returned for an id whose earlier consumption timed out
	// on this Guard: it counts as used until its expiry.
	ErrUndecided = errors.New("store: an earlier consumption of this id got no answer in time, so it counts as used")
	// ErrBusy is returned, without asking the store, when the guard
	// already tracks as many undecided and waiting consumptions as it may:
	// the caller must refuse; nothing was consumed or remembered.
	ErrBusy = errors.New("store: too many consumptions are undecided or waiting for the store")
)

// Guard runs consumptions with a deadline and remembers the ids whose
// consumption it stopped waiting for. One Guard serves any number of
// stores and namespaces; it is safe for concurrent use.
type Guard struct {
	// immutable after NewGuard
	size int

	mu sync.Mutex // a leaf: nothing else is taken while it is held, and no store is called
	// guarded by mu
	undecided map[guardKey]time.Time // (ns, id) → the instant it may be forgotten
	waiting   int                    // consumptions started whose store has not answered
	sweepAt   time.Time              // the next sweep of expired entries
}

type guardKey struct{ ns, id string }

// NewGuard returns a guard that remembers at most size undecided ids, less
// the consumptions waiting for their store; size ≤ 0 means
// DefaultGuardSize.
func NewGuard(size int) *Guard {
	if size <= 0 {
		size = DefaultGuardSize
	}
	return &Guard{size: size, undecided: map[guardKey]time.Time{}}
}

// Consume is st.Consume with a deadline of timeout (≤ 0 means
// DefaultTimeout) that holds whether or not st honours its context. See
// the file comment for ErrTimeout, ErrUndecided and ErrBusy.
func (g *Guard) Consume(ctx context.Context, st Store, ns, id string, expires time.Time, timeout time.Duration) (bool, error) {
	ok, _, err := g.consume(ctx, st, ns, id, expires, timeout, false)
	return ok, err
}

// ConsumeSince is Consume that also returns the store's epoch, as
// EpochStore.ConsumeSince does; a store that keeps no epoch gives the zero
// time.
func (g *Guard) ConsumeSince(ctx context.Context, st Store, ns, id string, expires time.Time, timeout time.Duration) (bool, time.Time, error) {
	return g.consume(ctx, st, ns, id, expires, timeout, true)
}

// answer is what the store said.
type answer struct {
	ok    bool
	epoch time.Time
	err   error
}

func (g *Guard) consume(ctx context.Context, st Store, ns, id string, expires time.Time, timeout time.Duration, since bool) (bool, time.Time, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if err := ctx.Err(); err != nil {
		return false, time.Time{}, err // nothing was asked: nothing is undecided
	}
	key := guardKey{ns, id}
	if err := g.admit(key, time.Now()); err != nil {
		return false, time.Time{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()               // a store that honours its context stops waiting too
	done := make(chan answer, 1) // buffered: a late answer is dropped, never blocks
	go func() {
		var a answer
		if es, ok := st.(EpochStore); ok && since {
			a.ok, a.epoch, a.err = es.ConsumeSince(cctx, ns, id, expires)
		} else {
			a.ok, a.err = st.Consume(cctx, ns, id, expires)
		}
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
		done <- a
	}()
	select {
	case a := <-done:
		if a.err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
			// The store gave up at the deadline: undecided all the same.
			g.remember(key, expires)
			return false, time.Time{}, fmt.Errorf("%w of %v: %v", ErrTimeout, timeout, a.err)
		}
		if a.err != nil {
			a.ok = false // fail-secure, whatever the store said
		}
		return a.ok, a.epoch, a.err
	case <-cctx.Done():
		g.remember(key, expires)
		if err := ctx.Err(); err != nil {
			return false, time.Time{}, err
		}
		return false, time.Time{}, fmt.Errorf("%w of %v", ErrTimeout, timeout)
	}
}

// admit refuses an id that is undecided, and any consumption when the
// guard is full; otherwise it counts the consumption as waiting.
func (g *Guard) admit(key guardKey, now time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.undecided) > 0 {
		if until, ok := g.undecided[key]; ok && now.Before(until) {
			return ErrUndecided
		}
		if !now.Before(g.sweepAt) {
			for k, until := range g.undecided {
				if !now.Before(until) {
					delete(g.undecided, k)
				}
			}
			g.sweepAt = now.Add(time.Second)
		}
	}
	if n := len(g.undecided) + g.waiting; n >= g.size {
		return fmt.Errorf("%w (%d, the most it keeps track of)", ErrBusy, n)
	}
	g.waiting++
	return nil
}

// Remember records (ns, id) as used until expires, as a timed-out
// consumption of it would: for an id that goes with one whose consumption
// timed out (a token with its DPoP proof). It adds even to a full guard,
// which only refuses to start consumptions.
func (g *Guard) Remember(ns, id string, expires time.Time) {
	g.remember(guardKey{ns, id}, expires)
}

// remember records key as used until expires.
func (g *Guard) remember(key guardKey, expires time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if until, ok := g.undecided[key]; !ok || expires.After(until) {
		g.undecided[key] = expires
	}
}

// Undecided reports how many ids the guard remembers, expired ones
// included until its next sweep.
func (g *Guard) Undecided() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.undecided)
}
