package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// stuckStore ignores its context, as the SQLite writer does: Consume waits
// until release, then answers first use without recording anything (a store
// whose write never landed), so only the guard can know the id was tried.
type stuckStore struct {
	release chan struct{}
	once    sync.Once
	calls   atomic.Int64
	epoch   time.Time
}

func newStuckStore(t *testing.T) *stuckStore {
	s := &stuckStore{release: make(chan struct{}), epoch: time.Now()}
	t.Cleanup(s.unblock)
	return s
}

func (s *stuckStore) unblock() { s.once.Do(func() { close(s.release) }) }

func (s *stuckStore) Consume(context.Context, string, string, time.Time) (bool, error) {
	s.calls.Add(1)
	<-s.release
	return true, nil
}

func (s *stuckStore) ConsumeSince(ctx context.Context, ns, id string, expires time.Time) (bool, time.Time, error) {
	ok, err := s.Consume(ctx, ns, id, expires)
	return ok, s.epoch, err
}

func (s *stuckStore) Close() error { return nil }

// The deadline holds against a store that ignores its context; the id then
// counts as used, and the store's late "first use" changes nothing.
func TestGuardDeadlineHoldsAgainstAStuckStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGuard(0)
		st := newStuckStore(t)
		expires := time.Now().Add(time.Minute)
		const timeout = 50 * time.Millisecond
		start := time.Now()
		ok, _, err := g.ConsumeSince(t.Context(), st, NSToken, "j1", expires, timeout)
		if took := time.Since(start); ok || !errors.Is(err, ErrTimeout) || took > timeout+200*time.Millisecond {
			t.Fatalf("stuck store: (%v, %v) after %v, want ErrTimeout after about %v", ok, err, took, timeout)
		}
		st.unblock()    // the late answer says "first use"
		synctest.Wait() // and has landed
		ok, err = g.Consume(t.Context(), st, NSToken, "j1", expires, timeout)
		if ok || !errors.Is(err, ErrUndecided) {
			t.Fatalf("retry after the late answer: (%v, %v), want ErrUndecided", ok, err)
		}
		if n := st.calls.Load(); n != 1 {
			t.Fatalf("the store was asked %d times, want once: the retry must not reach it", n)
		}
		// Another namespace, and another id, are other consumptions.
		if ok, err := g.Consume(t.Context(), st, NSProof, "j1", expires, timeout); !ok || err != nil {
			t.Fatalf("the same id as a proof: (%v, %v)", ok, err)
		}
		if g.Undecided() != 1 {
			t.Fatalf("undecided = %d, want 1", g.Undecided())
		}
	})
}

// An undecided id is forgotten once the credential it belongs to expired.
func TestGuardForgetsAtExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGuard(0)
		st := newStuckStore(t)
		expires := time.Now().Add(150 * time.Millisecond)
		if _, err := g.Consume(t.Context(), st, NSToken, "j", expires, 10*time.Millisecond); !errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
		st.unblock()
		if _, err := g.Consume(t.Context(), st, NSToken, "j", expires, time.Second); !errors.Is(err, ErrUndecided) {
			t.Fatalf("before expiry: %v, want ErrUndecided", err)
		}
		time.Sleep(time.Until(expires) + 10*time.Millisecond)
		if ok, err := g.Consume(t.Context(), st, NSToken, "j", time.Now().Add(time.Minute), time.Second); !ok || err != nil {
			t.Fatalf("after expiry: (%v, %v)", ok, err)
		}
	})
}

// The guard is bounded: ids it remembers plus consumptions waiting for the
// store (one that timed out and still waits counts as both). Full, it
// refuses at once without asking the store, rather than forget an
// undecided id.
func TestGuardFailsClosedWhenFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGuard(3)
		st := newStuckStore(t)
		expires := time.Now().Add(time.Minute)
		if _, err := g.Consume(t.Context(), st, NSToken, "a", expires, 10*time.Millisecond); !errors.Is(err, ErrTimeout) {
			t.Fatalf("a: %v", err)
		}
		// One undecided id, one consumption still waiting: room for one more.
		if _, err := g.Consume(t.Context(), st, NSToken, "b", expires, 10*time.Millisecond); !errors.Is(err, ErrTimeout) {
			t.Fatalf("b: %v", err)
		}
		start := time.Now()
		ok, err := g.Consume(t.Context(), st, NSToken, "c", expires, time.Second)
		if ok || !errors.Is(err, ErrBusy) || time.Since(start) > 100*time.Millisecond {
			t.Fatalf("full guard: (%v, %v) after %v, want ErrBusy at once", ok, err, time.Since(start))
		}
		if n := st.calls.Load(); n != 2 {
			t.Fatalf("the store was asked %d times, want 2", n)
		}
		// Once the store answers, the waiting ones leave; the undecided stay.
		st.unblock()
		synctest.Wait()
		if ok, err := g.Consume(t.Context(), st, NSToken, "c", expires, time.Second); !ok || err != nil {
			t.Fatalf("after the store answered: (%v, %v)", ok, err)
		}
		if _, err := g.Consume(t.Context(), st, NSToken, "a", expires, time.Second); !errors.Is(err, ErrUndecided) {
			t.Fatalf("a after the store answered: %v, want ErrUndecided", err)
		}
	})
}

// A store that answers in time is passed through, epoch included; a store
// that honours its context and gives up at the deadline is a timeout too.
func TestGuardPassesAnswersThrough(t *testing.T) {
	g := NewGuard(0)
	m := NewMemory()
	defer m.Close()
	expires := time.Now().Add(time.Minute)
	ok, epoch, err := g.ConsumeSince(t.Context(), m, NSToken, "x", expires, time.Second)
	if !ok || err != nil || !epoch.Equal(m.epoch) {
		t.Fatalf("first: (%v, %v, %v), want (true, %v, nil)", ok, epoch, err, m.epoch)
	}
	if ok, err := g.Consume(t.Context(), m, NSToken, "x", expires, time.Second); ok || err != nil {
		t.Fatalf("replay: (%v, %v), want (false, nil)", ok, err)
	}
	if _, err := g.Consume(t.Context(), m, NSToken, "y", time.Now().Add(-time.Second), time.Second); !errors.Is(err, ErrExpired) {
		t.Fatalf("a store error: %v, want ErrExpired", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if ok, err := g.Consume(ctx, m, NSToken, "z", expires, time.Second); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled call: (%v, %v)", ok, err)
	}
	if g.Undecided() != 0 {
		t.Fatalf("undecided = %d after answers in time", g.Undecided())
	}
	if _, err := g.Consume(t.Context(), ctxStore{}, NSToken, "w", expires, 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("a store that gives up at the deadline: %v, want ErrTimeout", err)
	}
	if g.Undecided() != 1 {
		t.Fatalf("undecided = %d, want 1", g.Undecided())
	}
}

// ctxStore waits for its context, as the Redis client does.
type ctxStore struct{}

func (ctxStore) Consume(ctx context.Context, _, _ string, _ time.Time) (bool, error) {
	<-ctx.Done()
	return false, ctx.Err()
}

func (ctxStore) Close() error { return nil }

// The epoch rule, to sub-second precision and with the issuer's skew.
func TestIssuedBefore(t *testing.T) {
	epoch := time.Unix(1000, 400e6) // 1000.4
	for _, tc := range []struct {
		name string
		iat  int64
		skew time.Duration
		want bool
	}{
		{"the epoch's second, no skew: it may be before 1000.4", 1000, 0, true},
		{"the next second, no skew", 1001, 0, false},
		{"an earlier second", 999, 0, true},
		{"5 s skew: stamped 1005 by a clock 5 s ahead, issued at 1000", 1005, 5 * time.Second, true},
		{"5 s skew: 1006 cannot be before the epoch", 1006, 5 * time.Second, false},
		{"a negative skew counts as none", 1001, -time.Second, false},
	} {
		if got := IssuedBefore(tc.iat, epoch, tc.skew); got != tc.want {
			t.Errorf("%s: IssuedBefore(%d, 1000.4, %v) = %v, want %v", tc.name, tc.iat, tc.skew, got, tc.want)
		}
	}
	if IssuedBefore(0, time.Time{}, time.Hour) {
		t.Error("a store without an epoch refused a token")
	}
}
