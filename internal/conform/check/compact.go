package check

import (
	"math/bits"
)

// The partial stores: what a hash-compaction or bitstate search keeps of a
// visited state instead of its words. Like the exact visited set they are
// split by hash into shards, one goroutine inserting into each, and only
// answer "seen before?": the words of the states being expanded live in
// the frontier (this level's and the next's), and the way back to the
// initial state in a links stream (links.go).
//
//	hashcompact:  shard ─► open-addressing table of 64-bit fingerprints
//	bitstate:     shard ─► 2^w / shards bits; a state sets k of them
type compactSet interface {
	// insert records the state k of hash h in shard sh; added is false
	// when it (or a state it cannot be told from) was seen before, and
	// The search bounds the states stored (a compact search numbers them
	// with 32 bits).
	insert(sh int, k []uint64, h uint64) (added bool)
	shardOf(h uint64) int
	shards() int
}

// fingerprints is the hash-compaction store: per shard, 256 open-
// addressing tables of 64-bit fingerprints (0 marks an empty slot; a
// fingerprint of 0 is stored as 1), the table picked by the hash bits
// after the shard's, the slot by a multiply-shift of the rest so that a
// table can grow by half rather than double: its load stays between 53%
// and 80%, about 10 to 15 bytes per state. Many small tables rather than
// one large one: a table that grows leaves behind an old table of 1/256
// of the shard, whose memory the next growths reuse, instead of a large
// one the process keeps (one table per shard peaked at 38 bytes of RSS
// per state on 10^7 states, the tables' live size 12).
type fingerprints struct {
	bits  uint // log2 of the number of shards
	parts []fpShard
}

type fpShard struct {
	subs [fpSubs]fpTable
}

type fpTable struct {
	slots []uint64
	n     int
}

const (
	fpSubBits = 8
	fpSubs    = 1 << fpSubBits
	fpInit    = 64
	fpLoadNum = 4 // grow past fpLoadNum/fpLoadDen
	fpLoadDen = 5
)

func newFingerprints(n int) *fingerprints {
	f := &fingerprints{}
	for 1<<f.bits < n {
		f.bits++
	}
	f.parts = make([]fpShard, 1<<f.bits)
	for i := range f.parts {
		for j := range f.parts[i].subs {
			f.parts[i].subs[j].slots = make([]uint64, fpInit)
		}
	}
	return f
}

func (f *fingerprints) shards() int { return len(f.parts) }

func (f *fingerprints) shardOf(h uint64) int {
	if f.bits == 0 {
		return 0
	}
	return int(h >> (64 - f.bits))
}

// sub is the table of h in its shard: the hash bits after the shard's.
func (f *fingerprints) sub(h uint64) int {
	return int(h << f.bits >> (64 - fpSubBits))
}

// slot is h's home slot in a table of n slots: the hash bits past the
// shard's and the table's, scaled to n.
func (f *fingerprints) slot(h uint64, n int) int {
	hi, _ := bits.Mul64(bits.RotateLeft64(h, int(f.bits)+fpSubBits), uint64(n))
	return int(hi)
}

func (f *fingerprints) insert(sh int, _ []uint64, h uint64) (added bool) {
	t := &f.parts[sh].subs[f.sub(h)]
	fp := max(h, 1)
	n := len(t.slots)
	i := f.slot(h, n)
	for {
		e := t.slots[i]
		if e == 0 {
			break
		}
		if e == fp {
			return false
		}
		if i++; i == n {
			i = 0
		}
	}
	t.slots[i] = fp
	t.n++
	if t.n*fpLoadDen > n*fpLoadNum {
		f.grow(t)
	}
	return true
}

// grow makes t half as large again and re-inserts every fingerprint.
func (f *fingerprints) grow(t *fpTable) {
	old := t.slots
	n := len(old) + len(old)/2
	t.slots = make([]uint64, n)
	for _, fp := range old {
		if fp == 0 {
			continue
		}
		i := f.slot(fp, n)
		for t.slots[i] != 0 {
			if i++; i == n {
				i = 0
			}
		}
		t.slots[i] = fp
	}
}

// bitstate is Holzmann's supertrace store: 2^log2 bits, split into
// equal shards by the hash's top bits; a state sets hashes bits of its
// shard, at h1 + i·h2 (Kirsch and Mitzenmacher's double hashing, h2 an
// independent hash of the words, forced odd so the positions differ).
type bitstate struct {
	bits   uint // log2 of the number of shards
	hashes int
	mask   uint64 // bits per shard - 1
	parts  [][]uint64
}

func newBitstate(log2, hashes, n int) *bitstate {
	b := &bitstate{hashes: hashes}
	for 1<<b.bits < n && int(b.bits) < log2-6 {
		b.bits++
	}
	per := uint64(1) << (uint(log2) - b.bits)
	b.mask = per - 1
	b.parts = make([][]uint64, 1<<b.bits)
	for i := range b.parts {
		b.parts[i] = make([]uint64, per/64)
	}
	return b
}

func (b *bitstate) shards() int { return len(b.parts) }

func (b *bitstate) shardOf(h uint64) int {
	if b.bits == 0 {
		return 0
	}
	return int(h >> (64 - b.bits))
}

func (b *bitstate) insert(sh int, k []uint64, h uint64) (added bool) {
	words := b.parts[sh]
	h2 := hashWordsSeed(k, 0xd6e8feb86659fd93) | 1
	pos := h
	for range b.hashes {
		i := pos & b.mask
		if words[i>>6]&(1<<(i&63)) == 0 {
			added = true
			words[i>>6] |= 1 << (i & 63)
		}
		pos += h2
	}
	return added
}

// hashWordsSeed is hashWords with another starting value: a second hash,
// independent of the first, for bitstate's double hashing.
func hashWordsSeed(k []uint64, seed uint64) uint64 {
	h := seed ^ uint64(len(k))*0x9e3779b97f4a7c15
	for _, w := range k {
		hi, lo := bits.Mul64(h^w, 0x94d049bb133111eb)
		h = hi ^ lo
	}
	return h ^ h>>31
}
