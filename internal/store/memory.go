package store

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Memory is an in-process Store: a map per shard guarded by its own mutex,
// with a min-heap of expiries per shard so that expired entries are dropped
// as new ones arrive. Memory therefore holds only unexpired ids (bounded by
// the rate of consumption times the token lifetime). It does not survive a
// restart and is not shared between processes: use it for tests and for a
// single gateway process whose tokens die with it.
//
//	Consume(ns, id) ──hash──▶ shard[i] ── lock ──▶ sweep heap ≤ now ─▶ map lookup/insert
type Memory struct {
	// immutable after NewMemory
	seed   maphash.Seed
	shards [memShards]memShard
	epoch  time.Time // creation: the store remembers nothing from before

	closed atomic.Bool
}

const memShards = 64

type memKey struct{ ns, id string }

type memShard struct {
	mu sync.Mutex
	// guarded by mu
	live map[memKey]int64 // expiry in Unix nanoseconds
	exp  expiryHeap       // every key in live, ordered by expiry
	_    [24]byte         // 64 bytes per shard: no two shards' mutexes share a cache line
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	m := &Memory{seed: maphash.MakeSeed(), epoch: time.Now().Truncate(time.Millisecond)}
	for i := range m.shards {
		m.shards[i].live = make(map[memKey]int64)
	}
	return m
}

// Consume implements Store.
func (m *Memory) Consume(ctx context.Context, ns, id string, expires time.Time) (bool, error) {
	now := time.Now()
	if m.closed.Load() {
		return false, ErrClosed
	}
	if err := check(ctx, ns, id, expires, now); err != nil {
		return false, err
	}
	// The shard depends on id alone; the map key keeps namespaces apart.
	s := &m.shards[maphash.String(m.seed, id)%memShards]
	k := memKey{ns, id}
	nowNS, expNS := now.UnixNano(), expires.UnixNano()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(nowNS)
	if _, used := s.live[k]; used { // everything left in live is unexpired
		return false, nil
	}
	s.live[k] = expNS
	s.exp.push(memEntry{k, expNS})
	return true, nil
}

// sweep drops the entries that expired at or before now. s.mu must be held.
func (s *memShard) sweep(now int64) {
	for len(s.exp) > 0 && s.exp[0].exp <= now {
		e := s.exp.pop()
		if s.live[e.key] == e.exp {
			delete(s.live, e.key)
		}
	}
}

// Len reports how many unexpired ids m holds.
func (m *Memory) Len() int {
	now := time.Now().UnixNano()
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		s.sweep(now)
		n += len(s.live)
		s.mu.Unlock()
	}
	return n
}

// Close implements Store. The entries are kept; Consume returns ErrClosed.
func (m *Memory) Close() error {
	m.closed.Store(true)
	return nil
}

type memEntry struct {
	key memKey
	exp int64
}

// expiryHeap is a binary min-heap on exp (container/heap would box every
// entry in an interface, one allocation per Consume).
type expiryHeap []memEntry

func (h *expiryHeap) push(e memEntry) {
	*h = append(*h, e)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].exp <= a[i].exp {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *expiryHeap) pop() memEntry {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a[last] = memEntry{}
	a = a[:last]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < len(a) && a[l].exp < a[small].exp {
			small = l
		}
		if r := l + 1; r < len(a) && a[r].exp < a[small].exp {
			small = r
		}
		if small == i {
			break
		}
		a[i], a[small] = a[small], a[i]
		i = small
	}
	*h = a
	return top
}
