package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"
)

// Memory holds only unexpired ids: a burst of short-lived ids is dropped
// once they expire, without a background goroutine.
func TestMemoryBoundedByExpiry(t *testing.T) {
	// In a synctest bubble the clock moves only when every goroutine
	// waits, so the expiry falls exactly where the test puts it.
	synctest.Test(t, func(t *testing.T) {
		m := NewMemory()
		defer m.Close()
		const n = 5000
		// One absolute expiry for the whole burst.
		expires := time.Now().Add(time.Second)
		for i := range n {
			if ok, err := m.Consume(t.Context(), NSProof, fmt.Sprint("burst-", i), expires); !ok || err != nil {
				t.Fatalf("first Consume of burst-%d: %v %v", i, ok, err)
			}
		}
		mustConsume(t, m, NSToken, "kept", time.Hour)
		if got := m.Len(); got != n+1 {
			t.Fatalf("Len before expiry = %d, want %d", got, n+1)
		}
		time.Sleep(time.Until(expires) + 50*time.Millisecond)
		if got := m.Len(); got != 1 {
			t.Fatalf("Len after expiry = %d, want 1 (only the unexpired id)", got)
		}
		if mustConsume(t, m, NSToken, "kept", time.Hour) {
			t.Fatal("unexpired id forgotten by the sweep")
		}
	})
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
	// In a synctest bubble the clock moves only when every goroutine
	// waits, so the expiry falls exactly where the test puts it.
	synctest.Test(t, func(t *testing.T) {
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
	})
}

// When one of two colliding keys expires, the other stays consumed, in
// either order of arrival.
func TestMemoryCollidingKeyOutlivesItsNeighbour(t *testing.T) {
	// In a synctest bubble the clock moves only when every goroutine
	// waits, so the expiry falls exactly where the test puts it.
	synctest.Test(t, func(t *testing.T) {
		for _, shortFirst := range []bool{true, false} {
			m := NewMemory()
			m.hashOf = func(memKey) uint64 { return 7 }
			now := time.Now()
			ids := []string{"short", "long"}
			ttl := map[string]time.Duration{"short": 100 * time.Millisecond, "long": time.Hour}
			if !shortFirst {
				ids[0], ids[1] = ids[1], ids[0]
			}
			for _, id := range ids {
				if ok, err := m.Consume(t.Context(), NSToken, id, now.Add(ttl[id])); !ok || err != nil {
					t.Fatalf("first consume of %q: %v %v", id, ok, err)
				}
			}
			time.Sleep(time.Until(now.Add(ttl["short"])) + 50*time.Millisecond)
			if ok, _ := m.Consume(t.Context(), NSToken, "long", now.Add(time.Hour)); ok {
				t.Fatalf("short first = %v: replay of the unexpired colliding key accepted after its neighbour expired", shortFirst)
			}
			if n := m.Len(); n != 1 {
				t.Fatalf("short first = %v: Len = %d, want 1", shortFirst, n)
			}
		}
	})
}

// Expired keys leave their bytes behind until the shard compacts; after
// compaction every unexpired key is still found, and new keys still go in.
func TestMemoryCompaction(t *testing.T) {
	// In a synctest bubble the clock moves only when every goroutine
	// waits, so the expiry falls exactly where the test puts it.
	synctest.Test(t, func(t *testing.T) {
		m := NewMemory()
		// One absolute expiry for the short-lived keys.
		now := time.Now()
		short := now.Add(time.Second)
		for i := range 3000 {
			exp := now.Add(time.Hour)
			if i%3 != 0 {
				exp = short
			}
			if ok, err := m.Consume(t.Context(), NSToken, fmt.Sprintf("key-%05d", i), exp); !ok || err != nil {
				t.Fatalf("key-%05d: %v %v", i, ok, err)
			}
		}
		time.Sleep(time.Until(short) + 50*time.Millisecond)
		if n := m.Len(); n != 1000 {
			t.Fatalf("Len = %d, want 1000", n)
		}
		for i := range m.shards {
			s := &m.shards[i]
			s.mu.Lock()
			if s.dead == 0 {
				t.Errorf("shard %d: no dead key bytes after expiry", i)
			}
			s.compact()
			if s.dead != 0 {
				t.Errorf("shard %d: %d dead bytes after compaction", i, s.dead)
			}
			s.mu.Unlock()
		}
		for i := range 3000 {
			ok, err := m.Consume(t.Context(), NSToken, fmt.Sprintf("key-%05d", i), now.Add(time.Hour))
			if err != nil || ok != (i%3 != 0) {
				t.Fatalf("key-%05d after compaction: ok = %v (%v), want %v", i, ok, err, i%3 != 0)
			}
		}
	})
}

func TestMemShardSize(t *testing.T) {
	if size := unsafe.Sizeof(memShard{}); size%64 != 0 {
		t.Errorf("memShard is %d bytes, not a whole number of cache lines", size)
	}
}

// The index against a map, through random inserts and removals of keys
// whose hashes crowd a few homes near the end of the table, so that probe
// runs collide, share hashes and wrap around.
func TestMemIndexAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var x memIndex
	x.init(memIndexMin)
	want := map[uint32]uint64{} // slot → hash
	var next uint32 = 1
	find := func(h uint64, slot uint32) bool {
		for i := x.home(h); x.e[i].slot != 0; i = (i + 1) & x.mask() {
			if x.e[i].slot == slot {
				return x.e[i].hash == h
			}
		}
		return false
	}
	for step := range 6000 {
		if len(want) == 0 || rng.IntN(3) != 0 {
			// A hash in the last eighth of the table's homes, or one of
			// a few shared values.
			h := uint64(rng.IntN(8)) << 59
			if rng.IntN(2) == 0 {
				h = ^uint64(0) - uint64(rng.IntN(1<<50))
			}
			x.reserve()
			pos := x.home(h)
			for x.e[pos].slot != 0 {
				pos = (pos + 1) & x.mask()
			}
			x.e[pos] = memIndexEntry{hash: h, slot: next}
			x.n++
			want[next] = h
			next++
		} else {
			for slot, h := range want { // a random one: map order
				x.remove(h, slot)
				delete(want, slot)
				if find(h, slot) {
					t.Fatalf("step %d: slot %d still found after remove", step, slot)
				}
				break
			}
		}
		if step%97 == 0 || len(want) < 8 {
			if x.n != len(want) {
				t.Fatalf("step %d: index holds %d entries, want %d", step, x.n, len(want))
			}
			for slot, h := range want {
				if !find(h, slot) {
					t.Fatalf("step %d: slot %d (hash %#x) not found from its home", step, slot, h)
				}
			}
		}
	}
}

// TestMemoryKeyBytesBounded: under steady churn (ids consumed and expiring
// at the same rate) the key bytes a shard keeps stay within a bound of its
// live ones, so a long-running gateway's memory store does not creep.
func TestMemoryKeyBytesBounded(t *testing.T) {
	m := NewMemory()
	defer m.Close()
	now := time.Now()
	const live, rounds = 20000, 10
	for r := range rounds {
		// Each round's ids expire before the next round's are consumed.
		exp := now.Add(time.Duration(r+1) * time.Minute)
		at := now.Add(time.Duration(r)*time.Minute + time.Second)
		for i := range live {
			id := fmt.Sprintf("round-%02d-id-%06d", r, i)
			h := m.hash(NSToken, id)
			s := &m.shards[h%memShards]
			s.mu.Lock()
			ok, err := s.consume(h, NSToken, id, at.UnixNano(), exp.UnixNano())
			s.mu.Unlock()
			if !ok || err != nil {
				t.Fatalf("consume %s: %v %v", id, ok, err)
			}
		}
	}
	var keys, liveBytes int
	for i := range m.shards {
		s := &m.shards[i]
		keys += len(s.keys)
		liveBytes += len(s.keys) - s.dead
	}
	perID := len(NSToken) + len("round-00-id-000000")
	if liveBytes != live*perID {
		t.Fatalf("live key bytes %d, want %d", liveBytes, live*perID)
	}
	// Within 4/3 of the live bytes, plus 16 KiB a shard of slack.
	if limit := liveBytes*4/3 + memShards*(1<<14); keys > limit {
		t.Errorf("the shards keep %d key bytes for %d live ones (limit %d): removed keys are not compacted away", keys, liveBytes, limit)
	}
}
