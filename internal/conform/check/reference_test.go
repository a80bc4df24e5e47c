package check

import "slices"

// The plainest breadth-first search's store, for the tests' reference BFS
// (referenceBFS): one goroutine, one arena, states numbered in the order
// they were found.

// store holds every visited state once, in an arena of words, with the
// state it was first reached from and the transition that reached it. Its
// index is an open-addressing hash table of state numbers, so a state costs
// its words, a parent, an action and two table slots: no per-entry
// allocation and no pointer for the garbage collector to follow.
type store struct {
	words   int
	keys    []uint64 // state i is keys[i*words : (i+1)*words]
	parents []uint32
	acts    []uint16
	table   []uint32 // 0: empty; otherwise a state number + 1
	mask    uint64   // len(table) - 1
}

func newStore(words int) *store {
	return &store{words: words, table: make([]uint32, 1024), mask: 1023}
}

// state returns the words of state i; the slice aliases the arena.
func (s *store) state(i uint32) []uint64 {
	o := int(i) * s.words
	return s.keys[o : o+s.words : o+s.words]
}

func (s *store) len() int { return len(s.parents) }

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

func (p *Program) trace(st *store, idx uint32, property string) *Trace {
	var steps []Step
	for i := idx; ; i = st.parents[i] {
		act := -1
		if st.parents[i] != noParent {
			act = int(st.acts[i])
		}
		steps = append(steps, Step{Action: act, Values: p.values(st.state(i))})
		if st.parents[i] == noParent {
			break
		}
	}
	slices.Reverse(steps)
	return &Trace{Model: p.model, Property: property, Steps: steps}
}
