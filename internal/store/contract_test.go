package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// opener returns a fresh handle on the store under test; the store is
// closed by t.Cleanup. Handles from one opener may share their backing
// storage, so every test draws its ids from uniqueIDs.
type opener func(t *testing.T) Store

// testContract is the one contract suite every Store implementation runs.
func testContract(t *testing.T, open opener) {
	t.Run("FirstConsumeOnly", func(t *testing.T) {
		s := open(t)
		id := uniqueID(t)
		if !mustConsume(t, s, NSToken, id, time.Hour) {
			t.Fatal("first Consume: ok = false, want true")
		}
		for i := range 3 {
			if mustConsume(t, s, NSToken, id, time.Hour) {
				t.Fatalf("Consume #%d of a used id: ok = true, want false (replay accepted)", i+2)
			}
		}
	})

	t.Run("NamespacesIndependent", func(t *testing.T) {
		s := open(t)
		id := uniqueID(t)
		for _, ns := range []string{NSToken, NSProof} {
			if !mustConsume(t, s, ns, id, time.Hour) {
				t.Fatalf("first Consume in %q: ok = false, want true", ns)
			}
		}
		for _, ns := range []string{NSToken, NSProof} {
			if mustConsume(t, s, ns, id, time.Hour) {
				t.Fatalf("second Consume in %q: ok = true, want false", ns)
			}
		}
	})

	t.Run("ExpiryForgetsOnlyExpired", func(t *testing.T) {
		s := open(t)
		short, long := uniqueID(t), uniqueID(t)
		const ttl = 300 * time.Millisecond
		if !mustConsume(t, s, NSToken, short, ttl) || !mustConsume(t, s, NSToken, long, time.Hour) {
			t.Fatal("first Consume: ok = false, want true")
		}
		if mustConsume(t, s, NSToken, short, time.Hour) {
			t.Fatal("unexpired short-lived id was forgotten")
		}
		// Kept: SQLite and Redis expire on their own real clocks (Redis
		// on the server's), which no bubble reaches; the assertions after
		// the pause hold however long it lasts.
		time.Sleep(ttl + 200*time.Millisecond)
		if mustConsume(t, s, NSToken, long, time.Hour) {
			t.Fatal("unexpired id was forgotten after another entry expired")
		}
		// The expired id may be forgotten (ok either way); whatever the
		// answer, it is now recorded until the new expiry and stays used.
		again := mustConsume(t, s, NSToken, short, time.Hour)
		t.Logf("Consume of an expired id: ok = %v", again)
		if mustConsume(t, s, NSToken, short, time.Hour) {
			t.Fatal("id re-consumed after expiry was forgotten again before its new expiry")
		}
	})

	t.Run("ConcurrentSameID", func(t *testing.T) {
		s := open(t)
		id := uniqueID(t)
		if got := raceConsume(t, []Store{s}, 1000, func(int) string { return id }); got != 1 {
			t.Fatalf("1000 concurrent Consumes of one id: %d succeeded, want exactly 1", got)
		}
	})

	t.Run("ConcurrentDistinctIDs", func(t *testing.T) {
		s := open(t)
		prefix := uniqueID(t)
		if got := raceConsume(t, []Store{s}, 1000, func(i int) string { return fmt.Sprint(prefix, "-", i) }); got != 1000 {
			t.Fatalf("1000 concurrent Consumes of distinct ids: %d succeeded, want 1000", got)
		}
	})

	t.Run("CancelledContext", func(t *testing.T) {
		s := open(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		ok, err := s.Consume(ctx, NSToken, uniqueID(t), time.Now().Add(time.Hour))
		if err == nil || ok {
			t.Fatalf("Consume with a cancelled context = (%v, %v), want (false, error)", ok, err)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v does not wrap context.Canceled", err)
		}
	})

	t.Run("InvalidArgumentsDenied", func(t *testing.T) {
		s := open(t)
		now := time.Now()
		for _, c := range []struct {
			name, ns, id string
			expires      time.Time
			want         error
		}{
			{"empty ns", "", "x", now.Add(time.Hour), ErrInvalid},
			{"colon in ns", "jti:x", "y", now.Add(time.Hour), ErrInvalid},
			{"empty id", NSToken, "", now.Add(time.Hour), ErrInvalid},
			{"long id", NSToken, strings.Repeat("a", MaxIDLen+1), now.Add(time.Hour), ErrInvalid},
			{"past expiry", NSToken, uniqueID(t), now.Add(-time.Second), ErrExpired},
			{"zero expiry", NSToken, uniqueID(t), time.Time{}, ErrExpired},
		} {
			ok, err := s.Consume(t.Context(), c.ns, c.id, c.expires)
			if ok || !errors.Is(err, c.want) {
				t.Errorf("%s: Consume = (%v, %v), want (false, %v)", c.name, ok, err, c.want)
			}
		}
		// The longest allowed id works.
		long := uniqueID(t)
		long += strings.Repeat("a", MaxIDLen-len(long))
		if !mustConsume(t, s, NSToken, long, time.Hour) {
			t.Error("Consume of a MaxIDLen id: ok = false")
		}
	})

	t.Run("ClosedDenies", func(t *testing.T) {
		s := open(t)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		ok, err := s.Consume(t.Context(), NSToken, uniqueID(t), time.Now().Add(time.Hour))
		if ok || !errors.Is(err, ErrClosed) {
			t.Fatalf("Consume after Close = (%v, %v), want (false, ErrClosed)", ok, err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

// mustConsume consumes id with an expiry ttl from now and fails the test on
// an error.
func mustConsume(t testing.TB, s Store, ns, id string, ttl time.Duration) bool {
	t.Helper()
	ok, err := s.Consume(t.Context(), ns, id, time.Now().Add(ttl))
	if err != nil {
		t.Fatalf("Consume(%q, %q): %v", ns, id, err)
	}
	return ok
}

// raceConsume starts n goroutines that wait on one barrier and then each
// consume idOf(i) in NSToken on stores[i%len(stores)]. It returns how many
// succeeded; any error fails the test.
func raceConsume(t *testing.T, stores []Store, n int, idOf func(int) string) int {
	t.Helper()
	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
		won   atomic.Int64
	)
	expires := time.Now().Add(time.Hour)
	for i := range n {
		wg.Go(func() {
			<-start
			ok, err := stores[i%len(stores)].Consume(t.Context(), NSToken, idOf(i), expires)
			if err != nil {
				t.Errorf("Consume #%d: %v", i, err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	return int(won.Load())
}

// uniqueID returns an id no other test uses, so that tests may share a
// backing store (one Redis server, one SQLite file).
func uniqueID(t testing.TB) string {
	return strings.NewReplacer("/", ".", " ", "_").Replace(t.Name()) + "-" + rand.Text()[:12]
}

func TestMemoryContract(t *testing.T) {
	testContract(t, func(t *testing.T) Store {
		s := NewMemory()
		t.Cleanup(func() { s.Close() })
		return s
	})
}
