package store

import (
	"fmt"
	"testing"
	"time"
)

// Memory holds only unexpired ids: a burst of short-lived ids is dropped
// once they expire, without a background goroutine.
func TestMemoryBoundedByExpiry(t *testing.T) {
	m := NewMemory()
	defer m.Close()
	const n = 5000
	// One absolute expiry for the whole burst, far enough ahead that a
	// loaded machine (the race detector) fills the store before it.
	expires := time.Now().Add(time.Second)
	for i := range n {
		if ok, err := m.Consume(t.Context(), NSProof, fmt.Sprint("burst-", i), expires); !ok || err != nil {
			t.Fatalf("first Consume of burst-%d: %v %v", i, ok, err)
		}
	}
	mustConsume(t, m, NSToken, "kept", time.Hour)
	if got := m.Len(); time.Now().Before(expires) && got != n+1 {
		t.Fatalf("Len before expiry = %d, want %d", got, n+1)
	}
	time.Sleep(time.Until(expires) + 50*time.Millisecond)
	if got := m.Len(); got != 1 {
		t.Fatalf("Len after expiry = %d, want 1 (only the unexpired id)", got)
	}
	if mustConsume(t, m, NSToken, "kept", time.Hour) {
		t.Fatal("unexpired id forgotten by the sweep")
	}
}

func TestExpiryHeapOrder(t *testing.T) {
	var h expiryHeap
	for _, e := range []int64{5, 3, 9, 1, 7, 3, 8, 2, 6, 4, 0} {
		h.push(memEntry{exp: e})
	}
	prev := int64(-1)
	for len(h) > 0 {
		e := h.pop()
		if e.exp < prev {
			t.Fatalf("pop returned %d after %d", e.exp, prev)
		}
		prev = e.exp
	}
}

// Keys that share a hash are still told apart: each is consumed once, and
// each expires on its own.
func TestMemoryHashCollisions(t *testing.T) {
	m := NewMemory()
	defer m.Close()
	m.hashOf = func(memKey) uint64 { return 42 } // every key collides
	now := time.Now()
	for _, id := range []string{"a", "b", "c"} {
		if ok, err := m.Consume(t.Context(), NSToken, id, now.Add(time.Hour)); !ok || err != nil {
			t.Fatalf("first consume of %q: %v %v", id, ok, err)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		if ok, _ := m.Consume(t.Context(), NSToken, id, now.Add(time.Hour)); ok {
			t.Fatalf("replay of colliding %q accepted", id)
		}
	}
	if ok, _ := m.Consume(t.Context(), NSProof, "a", now.Add(time.Hour)); !ok {
		t.Fatal("the same id in another namespace was refused")
	}
	// Short-lived colliding entries expire and are forgotten.
	if ok, _ := m.Consume(t.Context(), NSToken, "short", now.Add(20*time.Millisecond)); !ok {
		t.Fatal("short")
	}
	time.Sleep(40 * time.Millisecond)
	if n := m.Len(); n != 4 {
		t.Fatalf("Len = %d after the short entry expired, want 4", n)
	}
}
