package check

// visited is the set of states one check has stored, split by hash into
// shards so that a BFS level's new states can be inserted by several
// goroutines at once, each writing only its own shard:
//
//	state ──hash──► top bits pick the shard ──► shard: open-addressing table
//	                                               slot = 4-bit tag | local index + 1
//	                                            pages: words, parent, action
//
// A state's id is its index in its shard shifted left past the shard
// number, so ids are stable, and the parent of a state is its
// predecessor's id. Per state a shard keeps its packed words, a 4-byte
// parent, a 2-byte action and between 1.4 and 2.9 four-byte table slots
// (the table doubles at 70% load): no per-state allocation, no pointer for
// the garbage collector to follow, and pages of fixed size instead of
// slices that double and copy. The tag (4 more bits of the hash) lets a
// probe skip most slots of other states without reading their words.
type visited struct {
	words  int
	bits   uint // log2(len(shards))
	shards []shard
}

const (
	pageBits  = 14
	pageSize  = 1 << pageBits
	idxBits   = 28 // a table slot's local index; the tag has the other 4 bits
	idxMask   = 1<<idxBits - 1
	shardCap  = idxMask - 1 // most states one shard can hold
	tagShift  = 32          // the tag is hash bits 32..35, the slot is the low bits
	loadNum   = 7           // grow when more than loadNum/loadDen of the slots are full
	loadDen   = 10
	tableInit = 1024
)

// shard is one part of a visited set. Only one goroutine writes a shard at
// a time; nothing reads it meanwhile.
type shard struct {
	words   int
	n       int // states stored
	keys    [][]uint64
	parents [][]uint32
	acts    [][]uint16
	table   []uint32 // 0: empty; otherwise tag<<idxBits | (local index + 1)
	mask    uint64   // len(table) - 1
}

// newVisited returns an empty set of states of the given width with at
// least n shards (rounded up to a power of two).
func newVisited(words, n int) *visited {
	v := &visited{words: words}
	for 1<<v.bits < n {
		v.bits++
	}
	v.shards = make([]shard, 1<<v.bits)
	for i := range v.shards {
		v.shards[i] = shard{words: words, table: make([]uint32, tableInit), mask: tableInit - 1}
	}
	return v
}

// shardOf is the shard that holds a state of hash h.
func (v *visited) shardOf(h uint64) int {
	if v.bits == 0 {
		return 0
	}
	return int(h >> (64 - v.bits))
}

func (v *visited) id(shard int, local uint32) uint32 { return local<<v.bits | uint32(shard) }

func (v *visited) split(id uint32) (*shard, uint32) {
	return &v.shards[id&(1<<v.bits-1)], id >> v.bits
}

// state returns the words of state id; the slice aliases the set.
func (v *visited) state(id uint32) []uint64 {
	s, l := v.split(id)
	return s.state(l)
}

// parent returns the state id was first reached from (noParent for the
// initial state) and the transition that reached it.
func (v *visited) parent(id uint32) (uint32, uint16) {
	s, l := v.split(id)
	return s.parents[l>>pageBits][l&(pageSize-1)], s.acts[l>>pageBits][l&(pageSize-1)]
}

func (s *shard) state(l uint32) []uint64 {
	o := int(l&(pageSize-1)) * s.words
	return s.keys[l>>pageBits][o : o+s.words : o+s.words]
}

// insert stores k (of hash h) with its parent and action unless it is
// already stored; it returns k's local index and whether k is new. ok is
// false when the shard is full (shardCap states).
func (s *shard) insert(k []uint64, h uint64, parent uint32, act uint16) (local uint32, added, ok bool) {
	tag := uint32(h>>tagShift&0xF) << idxBits
	i := h & s.mask
	for {
		e := s.table[i]
		if e == 0 {
			break
		}
		if e&^idxMask == tag && equalWords(s.state(e&idxMask-1), k) {
			return e&idxMask - 1, false, true
		}
		i = (i + 1) & s.mask
	}
	if s.n >= shardCap {
		return 0, false, false
	}
	local = uint32(s.n)
	if s.n&(pageSize-1) == 0 {
		s.keys = append(s.keys, make([]uint64, pageSize*s.words))
		s.parents = append(s.parents, make([]uint32, pageSize))
		s.acts = append(s.acts, make([]uint16, pageSize))
	}
	copy(s.state(local), k)
	s.parents[local>>pageBits][local&(pageSize-1)] = parent
	s.acts[local>>pageBits][local&(pageSize-1)] = act
	s.n++
	if uint64(s.n)*loadDen > uint64(len(s.table))*loadNum {
		s.grow() // re-inserts every state, this one included
	} else {
		s.table[i] = tag | (local + 1)
	}
	return local, true, true
}

// grow doubles the table and re-inserts every state.
func (s *shard) grow() {
	s.table = nil // let the old table go before the new one is allocated
	s.table = make([]uint32, 2*(s.mask+1))
	s.mask = uint64(len(s.table) - 1)
	for l := uint32(0); int(l) < s.n; l++ {
		h := hashWords(s.state(l))
		i := h & s.mask
		for s.table[i] != 0 {
			i = (i + 1) & s.mask
		}
		s.table[i] = uint32(h>>tagShift&0xF)<<idxBits | (l + 1)
	}
}

// traceTo is the path from the initial state to state id.
func (p *Program) traceTo(v *visited, id uint32, property string) *Trace {
	var steps []Step
	for {
		parent, act := v.parent(id)
		a := -1
		if parent != noParent {
			a = int(act)
		}
		steps = append(steps, Step{Action: a, Values: p.values(v.state(id))})
		if parent == noParent {
			break
		}
		id = parent
	}
	for i, j := 0, len(steps)-1; i < j; i, j = i+1, j-1 {
		steps[i], steps[j] = steps[j], steps[i]
	}
	return &Trace{Model: p.model, Property: property, Steps: steps}
}
