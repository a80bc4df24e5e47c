package store

import (
	"context"
	"errors"
	"hash/maphash"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Memory is an in-process Store: 64 shards, each a hash index over a table
// of slots, with a min-heap of expiries so that expired entries are dropped
// as new ones arrive. Memory therefore holds only unexpired ids (bounded by
// the rate of consumption times the token lifetime). It does not survive a
// restart and is not shared between processes: use it for tests and for a
// single gateway process whose tokens die with it.
//
//	Consume(ns, id) ──hash──▶ shard[h%64] ── lock ──▶ sweep heap ≤ now
//	                                               ──▶ index: probe from h's home ──▶ slot ──▶ key bytes
//
// Each id is hashed once: the low bits of the 64-bit hash pick the shard,
// the high bits its home in the shard's index. A slot keeps the exact key
// (its bytes in the shard's key buffer), so keys that share a hash are told
// apart by comparing them.
//
// The index is open addressing with linear probing: the entries of one
// hash all lie in the run that starts at its home, so the probe that looks
// for a key ends on the empty entry where the key then goes (one probe
// sequence for the lookup and the insert).
//
// Nothing a shard holds contains a pointer (the index and the slots are
// plain numbers, the keys are copied into one byte buffer): the garbage
// collector never scans the store's entries, however many there are, and
// the caller's strings are not kept alive by it.
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
	index memIndex   // hash of (ns, id) → slot, for every used slot
	slots []memSlot  // slots[0] is unused: slot number 0 means none
	free  []uint32   // numbers of unused slots
	keys  []byte     // the ns and id bytes of every used slot, back to back
	dead  int        // bytes of keys that no used slot refers to
	exp   expiryHeap // every used slot, ordered by expiry
	_     [40]byte   // 192 bytes per shard: no two shards' mutexes share a cache line
}

// memSlot is one consumed (ns, id). n == 0 marks an unused slot (an id is
// never empty).
type memSlot struct {
	hash uint64
	exp  int64  // Unix nanoseconds
	off  uint32 // keys[off:off+ns] is the namespace, then n-ns bytes of id
	ns   uint32
	n    uint32
}

// errMemFull is returned when one shard's key buffer would pass 4 GiB.
var errMemFull = errors.New("store: memory store is full")

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	m := &Memory{seed: maphash.MakeSeed(), epoch: time.UnixMilli(ceilMilli(time.Now()))}
	for i := range m.shards {
		m.shards[i].index.init(memIndexMin)
		m.shards[i].slots = make([]memSlot, 1)
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
	var h uint64
	if m.hashOf != nil {
		h = m.hashOf(memKey{ns, id})
	} else {
		h = m.hash(ns, id)
	}
	s := &m.shards[h%memShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.consume(h, ns, id, now.UnixNano(), expires.UnixNano())
}

// hash is the one hash of a key: its low bits pick the shard, its high bits
// the key's home in the shard's index. Keys that share a hash are told
// apart by comparing them.
func (m *Memory) hash(ns, id string) uint64 {
	return maphash.String(m.seed, id) + 0x9e3779b97f4a7c15*maphash.String(m.seed, ns)
}

// consume records (ns, id) unless it is recorded and unexpired. s.mu must be
// held.
func (s *memShard) consume(h uint64, ns, id string, now, exp int64) (bool, error) {
	s.sweep(now)
	// Everything left is unexpired.
	s.index.reserve()
	x := &s.index
	pos := x.home(h)
	for ; x.e[pos].slot != 0; pos = (pos + 1) & x.mask() {
		if e := x.e[pos]; e.hash == h && s.is(e.slot, ns, id) {
			return false, nil
		}
	}
	if size := uint64(len(ns) + len(id)); uint64(len(s.keys))+size > math.MaxUint32 {
		s.compact()
		if uint64(len(s.keys))+size > math.MaxUint32 {
			return false, errMemFull
		}
	}
	var i uint32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		i = uint32(len(s.slots))
		s.slots = append(s.slots, memSlot{})
	}
	s.slots[i] = memSlot{hash: h, exp: exp, off: uint32(len(s.keys)), ns: uint32(len(ns)), n: uint32(len(ns) + len(id))}
	s.keys = append(append(s.keys, ns...), id...)
	x.e[pos] = memIndexEntry{hash: h, slot: i}
	x.n++
	s.exp.push(memEntry{exp: exp, slot: i})
	return true, nil
}

// is reports whether slot i holds (ns, id).
func (s *memShard) is(i uint32, ns, id string) bool {
	sl := &s.slots[i]
	if int(sl.ns) != len(ns) || int(sl.n-sl.ns) != len(id) {
		return false
	}
	key := s.keys[sl.off : sl.off+sl.n]
	return string(key[:sl.ns]) == ns && string(key[sl.ns:]) == id
}

// sweep drops the entries that expired at or before now. s.mu must be held.
// Each used slot has exactly one heap entry, and a slot is reused only
// after that entry was popped, so every entry popped names a live slot.
func (s *memShard) sweep(now int64) {
	for len(s.exp) > 0 && s.exp[0].exp <= now {
		s.remove(s.exp.pop().slot)
	}
	// Removed keys' bytes are dropped once they are over a quarter of the
	// buffer (and 16 KiB): the buffer stays within 4/3 of its live bytes,
	// and each byte is copied a bounded number of times.
	if s.dead > 1<<14 && s.dead > len(s.keys)/4 {
		s.compact()
	}
}

// remove takes slot i out of the index and frees it.
func (s *memShard) remove(i uint32) {
	sl := s.slots[i]
	s.index.remove(sl.hash, i)
	s.dead += int(sl.n)
	s.slots[i] = memSlot{}
	s.free = append(s.free, i)
}

// compact copies the key bytes of the used slots into a new buffer, leaving
// out those of removed slots.
func (s *memShard) compact() {
	keys := make([]byte, 0, len(s.keys)-s.dead)
	for i := range s.slots {
		sl := &s.slots[i]
		if sl.n == 0 {
			continue
		}
		off := len(keys)
		keys = append(keys, s.keys[sl.off:sl.off+sl.n]...)
		sl.off = uint32(off)
	}
	s.keys, s.dead = keys, 0
}

// Len reports how many unexpired ids m holds.
func (m *Memory) Len() int {
	now := time.Now().UnixNano()
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		s.sweep(now)
		n += len(s.slots) - 1 - len(s.free)
		s.mu.Unlock()
	}
	return n
}

// Close implements Store. The entries are kept; Consume returns ErrClosed.
func (m *Memory) Close() error {
	m.closed.Store(true)
	return nil
}

// memIndexMin is the size a shard's index starts at.
const memIndexMin = 64

// memIndex is an open-addressing hash table with linear probing, from the
// hash of a key to its slot. It is at most three quarters full, so a probe
// always ends on an empty entry; it grows by doubling and never shrinks
// (like a Go map, it keeps the size of its busiest moment).
type memIndex struct {
	e     []memIndexEntry // len is a power of two
	n     int             // entries in use
	shift uint            // 64 - log2(len(e)): the home of hash h is h >> shift
}

// memIndexEntry is one key in the index; slot 0 marks an empty entry.
type memIndexEntry struct {
	hash uint64
	slot uint32
}

func (x *memIndex) init(size int) {
	x.e = make([]memIndexEntry, size)
	x.n = 0
	x.shift = uint(64 - bits.Len(uint(size-1)))
}

func (x *memIndex) mask() int { return len(x.e) - 1 }

// home is where the probe for hash h starts: its high bits, since the low
// ones chose the shard and are the same for every key in it.
func (x *memIndex) home(h uint64) int { return int(h >> x.shift) }

// reserve makes room for one more entry.
func (x *memIndex) reserve() {
	if (x.n+1)*4 <= len(x.e)*3 {
		return
	}
	old := x.e
	x.init(2 * len(old))
	for _, e := range old {
		if e.slot == 0 {
			continue
		}
		pos := x.home(e.hash)
		for x.e[pos].slot != 0 {
			pos = (pos + 1) & x.mask()
		}
		x.e[pos] = e
		x.n++
	}
}

// remove deletes the entry of slot, whose key has hash h, and closes the gap
// by shifting back the entries after it that probed past it (Knuth's
// algorithm R), so that no probe run is ever broken by a hole.
func (x *memIndex) remove(h uint64, slot uint32) {
	mask := x.mask()
	i := x.home(h)
	for x.e[i].slot != slot {
		if x.e[i].slot == 0 {
			return // not indexed: nothing to remove
		}
		i = (i + 1) & mask
	}
	for j := i; ; {
		j = (j + 1) & mask
		if x.e[j].slot == 0 {
			break
		}
		// The entry at j may fill the hole at i unless its home lies
		// cyclically in (i, j]: it must stay at or after its home.
		k := x.home(x.e[j].hash)
		if i <= j && (k <= i || k > j) || i > j && k <= i && k > j {
			x.e[i] = x.e[j]
			i = j
		}
	}
	x.e[i] = memIndexEntry{}
	x.n--
}

// memEntry is one used slot in the expiry heap.
type memEntry struct {
	exp  int64
	slot uint32
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
