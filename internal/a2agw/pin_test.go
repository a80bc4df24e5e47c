package a2agw

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestPinStores is the contract every PinStore meets; the Redis store runs
// it in pin_redis_integration_test.go.
func TestPinStores(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		m := &MemoryPins{}
		pinContract(t, m, m)
	})
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "pins.db")
		open := func() PinStore {
			s, err := OpenSQLitePins(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		pinContract(t, open(), open())
	})
}

// pinContract checks s, and that other, a second handle on the same
// storage (another gateway's), agrees with it; other may be s itself.
func pinContract(t *testing.T, s, other PinStore) {
	t.Helper()
	ctx := context.Background()
	if p, first, err := s.Pin(ctx, "up", "h1"); err != nil || !first || p != "h1" {
		t.Fatalf("first Pin = %q %v %v", p, first, err)
	}
	if p, first, err := s.Pin(ctx, "up", "h2"); err != nil || first || p != "h1" {
		t.Fatalf("a changed card: Pin = %q %v %v, want the first pin kept", p, first, err)
	}
	if p, _, _ := s.Pin(ctx, "other", "h9"); p != "h9" {
		t.Errorf("pins are per upstream: got %q", p)
	}
	if err := s.Approve(ctx, "up", "h2"); err != nil {
		t.Fatal(err)
	}
	if p, _, _ := s.Pin(ctx, "up", "h2"); p != "h2" {
		t.Errorf("after Approve: %q", p)
	}
	// Concurrent first use, through both handles: one hash wins and
	// everyone sees it.
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		h := s
		if i%2 == 1 {
			h = other
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _, _ = h.Pin(ctx, "race", fmt.Sprint("h", i))
		}()
	}
	wg.Wait()
	for _, g := range got {
		if g != got[0] || g == "" {
			t.Fatalf("concurrent first pins disagree: %q", got)
		}
	}
	// What one handle approved, the other sees.
	if err := other.Approve(ctx, "up", "h3"); err != nil {
		t.Fatal(err)
	}
	if p, first, _ := s.Pin(ctx, "up", "h2"); p != "h3" || first {
		t.Errorf("an approval through the other handle: Pin = %q (first %v), want h3", p, first)
	}
}
