package a2agw

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestPinStores is the contract every PinStore meets.
func TestPinStores(t *testing.T) {
	stores := map[string]func(t *testing.T) PinStore{
		"memory": func(*testing.T) PinStore { return &MemoryPins{} },
		"sqlite": func(t *testing.T) PinStore {
			s, err := OpenSQLitePins(filepath.Join(t.TempDir(), "pins.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t)
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
			// Concurrent first use: one hash wins and everyone sees it.
			var wg sync.WaitGroup
			got := make([]string, 8)
			for i := range got {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i], _, _ = s.Pin(ctx, "race", fmt.Sprint("h", i))
				}()
			}
			wg.Wait()
			for _, g := range got {
				if g != got[0] || g == "" {
					t.Fatalf("concurrent first pins disagree: %q", got)
				}
			}
		})
	}
}
