package check

import "math/bits"

// A state is packed into words of 64 bits: every variable's value, offset
// by its minimum, in a fixed bit field of one word (a field never straddles
// two words). Two states are equal exactly when their words are. A model
// whose variables fit in 128 bits uses two words or fewer; a wider one uses
// as many as it needs.

// store holds every visited state once, in an arena of words, with the
// state it was first reached from and the transition that reached it. Its
// index is an open-addressing hash table of state numbers, so a state costs
// its words, a parent, an action and two table slots: no per-entry
// allocation and no pointer for the garbage collector to follow.
//
// Only the merging goroutine writes a store; workers call find between
// merges, never during one.
type store struct {
	words   int
	keys    []uint64 // state i is keys[i*words : (i+1)*words]
	parents []uint32
	acts    []uint16
	table   []uint32 // 0: empty; otherwise a state number + 1
	mask    uint64   // len(table) - 1
}

const noParent = ^uint32(0)

func newStore(words int) *store {
	s := &store{words: words, table: make([]uint32, 1024), mask: 1023}
	return s
}

// hashWords mixes a state's words into 64 bits.
func hashWords(k []uint64) uint64 {
	h := uint64(len(k)) * 0x9e3779b97f4a7c15
	for _, w := range k {
		hi, lo := bits.Mul64(h^w, 0xbf58476d1ce4e5b9)
		h = hi ^ lo
	}
	return h ^ h>>29
}

// state returns the words of state i; the slice aliases the arena.
func (s *store) state(i uint32) []uint64 {
	o := int(i) * s.words
	return s.keys[o : o+s.words : o+s.words]
}

func (s *store) len() int { return len(s.parents) }

func equalWords(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// find reports whether k (with hash h) is stored.
func (s *store) find(k []uint64, h uint64) bool {
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		e := s.table[i]
		if e == 0 {
			return false
		}
		if equalWords(s.state(e-1), k) {
			return true
		}
	}
}

// add stores k, which must not be stored yet, and returns its number.
func (s *store) add(k []uint64, h uint64, parent uint32, act uint16) uint32 {
	idx := uint32(len(s.parents))
	s.keys = append(s.keys, k...)
	s.parents = append(s.parents, parent)
	s.acts = append(s.acts, act)
	if uint64(len(s.parents))*2 > uint64(len(s.table)) {
		s.grow()
	} else {
		s.insert(idx, h)
	}
	return idx
}

func (s *store) insert(idx uint32, h uint64) {
	i := h & s.mask
	for s.table[i] != 0 {
		i = (i + 1) & s.mask
	}
	s.table[i] = idx + 1
}

// grow doubles the table and re-inserts every state, the newest included.
func (s *store) grow() {
	s.table = make([]uint32, 2*len(s.table))
	s.mask = uint64(len(s.table) - 1)
	for i := 0; i < s.len(); i++ {
		s.insert(uint32(i), hashWords(s.state(uint32(i))))
	}
}
