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
//	Consume(ns, id) ──hash──▶ shard[h%64] ── lock ──▶ sweep heap ≤ now ─▶ map[h] lookup/insert
//
// Each id is hashed once: the 64-bit hash picks the shard and keys the map,
// and the entry keeps (ns, id) so that two keys with the same hash are told
// apart (the second goes to a small overflow map).
type Memory struct {
	// immutable after NewMemory
	seed   maphash.Seed
	shards [memShards]memShard
	epoch  time.Time           // creation: the store remembers nothing from before
	hashOf func(memKey) uint64 // tests force collisions with it; nil means hash

	closed atomic.Bool
}

const memShards = 64

type memKey struct{ ns, id string }

type memShard struct {
	mu sync.Mutex
	// guarded by mu
	live map[uint64]memVal // by hash of (ns, id)
	more map[memKey]int64  // keys whose hash another key in live already has; expiry in Unix ns
	exp  expiryHeap        // every key in live and more, ordered by expiry
	_    [16]byte          // 64 bytes per shard: no two shards' mutexes share a cache line
}

type memVal struct {
	key memKey
	exp int64 // Unix nanoseconds
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	m := &Memory{seed: maphash.MakeSeed(), epoch: time.Now().Truncate(time.Millisecond)}
	for i := range m.shards {
		m.shards[i].live = make(map[uint64]memVal)
		m.shards[i].more = make(map[memKey]int64)
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
	k := memKey{ns, id}
	var h uint64
	if m.hashOf != nil {
		h = m.hashOf(k)
	} else {
		h = m.hash(k)
	}
	s := &m.shards[h%memShards]
	nowNS, expNS := now.UnixNano(), expires.UnixNano()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(nowNS)
	// Everything left in live and more is unexpired.
	switch v, taken := s.live[h]; {
	case !taken:
		s.live[h] = memVal{k, expNS}
	case v.key == k:
		return false, nil
	default: // another key with the same hash
		if _, used := s.more[k]; used {
			return false, nil
		}
		s.more[k] = expNS
	}
	s.exp.push(memEntry{k, h, expNS})
	return true, nil
}

// hash is the one hash of a key: its shard and its map key.
func (m *Memory) hash(k memKey) uint64 {
	var mh maphash.Hash
	mh.SetSeed(m.seed)
	mh.WriteString(k.ns)
	mh.WriteByte(0) // keys that still share a hash are told apart by comparing them
	mh.WriteString(k.id)
	return mh.Sum64()
}

// sweep drops the entries that expired at or before now. s.mu must be held.
func (s *memShard) sweep(now int64) {
	for len(s.exp) > 0 && s.exp[0].exp <= now {
		e := s.exp.pop()
		if v, ok := s.live[e.hash]; ok && v.key == e.key && v.exp == e.exp {
			delete(s.live, e.hash)
		} else if exp, ok := s.more[e.key]; ok && exp == e.exp {
			delete(s.more, e.key)
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
		n += len(s.live) + len(s.more)
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
	key  memKey
	hash uint64
	exp  int64
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
