package check

import (
	"slices"
	"sync"
)

// blockStates is how many frontier states one worker expands before the
// shards take in its successors. It bounds the successors waiting in
// memory, whatever the size of a level, to about blockStates × workers ×
// the number of transitions.
const blockStates = 2048

// maxShards bounds the shards of a visited set: an id holds the shard
// number in its low bits and the shard's index in the other 28.
const maxShards = 16

// search is the state of one Check: the visited set and the buffers that
// carry a block of a level from expansion to insertion.
//
// An exact search keeps every state in seen and names a state by its id
// there. A partial search (hash compaction, bitstate) keeps only what
// compact needs to tell whether a state was seen; it numbers states in
// BFS order (the initial state is 0, and a level's states are
// consecutive), keeps the words of the level being expanded (front, whose
// first state is frontBase) and of the next (nextWords), and records how
// each state was reached in links, so that a counterexample can be
// replayed from the initial state.
type search struct {
	p         *Program
	trans     []ctrans
	actIndex  []uint16 // index in trans → index in the model
	inv       evalFn   // nil: explore only
	visit     func(k []uint64)
	workers   int
	maxStates int
	res       *Result
	seen      *visited     // exact
	compact   compactSet   // partial
	links     *links       // partial
	front     []uint64     // partial: the words of the level being expanded
	frontBase uint32       // partial: the number of front's first state
	nextWords []uint64     // partial: the words of the next level so far
	badWords  []uint64     // partial: the violating state, once found
	bufs      []candBuf    // one per worker
	outs      [][]newState // one per shard
}

// state returns the words of state id, which is being expanded.
func (s *search) state(id uint32) []uint64 {
	if s.seen != nil {
		return s.seen.state(id)
	}
	o := int(id-s.frontBase) * s.p.words
	return s.front[o : o+s.p.words : o+s.p.words]
}

func (s *search) shards() int {
	if s.seen != nil {
		return len(s.seen.shards)
	}
	return s.compact.shards()
}

func (s *search) shardOf(h uint64) int {
	if s.seen != nil {
		return s.seen.shardOf(h)
	}
	return s.compact.shardOf(h)
}

// cand is a successor found by a worker, waiting for its shard. pos is its
// place in the order of a sequential BFS: the worker in the high 32 bits
// (workers expand contiguous chunks of the block, in order), then its
// count within the worker.
type cand struct {
	hash   uint64
	pos    uint64
	parent uint32
	act    uint16
}

// candBuf is one worker's successors for a block, split by shard; the
// words of cands[s][i] are words[s][i*W : (i+1)*W].
type candBuf struct {
	words [][]uint64
	cands [][]cand
	edges int
	fired []int
}

// newState is a state a shard stored for the first time: in an exact
// search, id; in a partial one, candidate at of worker src's buffer for
// the shard.
type newState struct {
	pos     uint64
	id      uint32
	src, at uint32
	bad     bool // it violates the property
	full    bool // not a state: the shard was full at pos
}

// stopAt says why a block ended the search, if it did.
type stopAt struct {
	bad, full bool
	id        uint32 // for bad: the violating state
}

// block expands the frontier states of one block, stores their new
// successors and appends them to next in the order of a sequential BFS.
// Expansion runs on up to s.workers goroutines, insertion on one goroutine
// per shard; each phase ends before the next begins, so a shard is never
// read while it is written.
func (s *search) block(block []uint32, next []uint32) ([]uint32, stopAt) {
	nsh := s.shards()
	if s.bufs == nil {
		s.bufs = make([]candBuf, s.workers)
		for w := range s.bufs {
			s.bufs[w] = candBuf{words: make([][]uint64, nsh), cands: make([][]cand, nsh), fired: make([]int, len(s.trans))}
		}
		s.outs = make([][]newState, nsh)
	}
	n := s.workers
	if len(block) < 256*n {
		n = 1
	}
	chunk := (len(block) + n - 1) / n
	parallel(n, func(w int) {
		s.expand(w, block[min(w*chunk, len(block)):min((w+1)*chunk, len(block))])
	})
	total := 0
	for w := range n {
		b := &s.bufs[w]
		s.res.Edges += b.edges
		for ti, c := range b.fired {
			s.res.Fired[s.actIndex[ti]] += c
		}
		for _, cs := range b.cands {
			total += len(cs)
		}
	}
	shards := nsh
	if total < 4096 {
		shards = 1
	}
	if shards == 1 {
		for sh := range nsh {
			s.insert(sh, n)
		}
	} else {
		parallel(nsh, func(sh int) { s.insert(sh, n) })
	}
	return s.merge(next)
}

// parallel runs f(0..n-1), f(0) on this goroutine.
func parallel(n int, f func(int)) {
	if n == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i)
		}()
	}
	f(0)
	wg.Wait()
}

// expand fires every transition of every state of chunk into worker w's
// buffer.
func (s *search) expand(w int, chunk []uint32) {
	b := &s.bufs[w]
	for sh := range b.cands {
		b.words[sh], b.cands[sh] = b.words[sh][:0], b.cands[sh][:0]
	}
	b.edges = 0
	clear(b.fired)
	W := s.p.words
	next := make([]uint64, W)
	pos := uint64(w) << 32
	for _, id := range chunk {
		cur := s.state(id)
		for ti := range s.trans {
			if !s.trans[ti].fire(cur, next) {
				continue
			}
			b.edges++
			b.fired[ti]++
			h := hashWords(next)
			sh := s.shardOf(h)
			b.words[sh] = append(b.words[sh], next...)
			b.cands[sh] = append(b.cands[sh], cand{hash: h, pos: pos, parent: id, act: s.actIndex[ti]})
			pos++
		}
	}
}

// insert stores shard sh's candidates from the first n workers, in
// sequential order, and lists the new ones in s.outs[sh]. It stops at the
// first new state that violates the property: nothing after it counts.
func (s *search) insert(sh, n int) {
	W := s.p.words
	out := s.outs[sh][:0]
	defer func() { s.outs[sh] = out }()
	if s.compact != nil {
		for w := range n {
			words := s.bufs[w].words[sh]
			for i, c := range s.bufs[w].cands[sh] {
				k := words[i*W : (i+1)*W : (i+1)*W]
				if !s.compact.insert(sh, k, c.hash) {
					continue
				}
				bad := s.inv != nil && s.inv(k) == 0
				out = append(out, newState{pos: c.pos, src: uint32(w), at: uint32(i), bad: bad})
				if bad {
					return
				}
			}
		}
		return
	}
	shard := &s.seen.shards[sh]
	for w := range n {
		words := s.bufs[w].words[sh]
		for i, c := range s.bufs[w].cands[sh] {
			k := words[i*W : (i+1)*W : (i+1)*W]
			local, added, ok := shard.insert(k, c.hash, c.parent, c.act)
			if !ok {
				out = append(out, newState{pos: c.pos, full: true})
				return
			}
			if !added {
				continue
			}
			bad := s.inv != nil && s.inv(k) == 0
			out = append(out, newState{pos: c.pos, id: s.seen.id(sh, local), bad: bad})
			if bad {
				return
			}
		}
	}
}

// merge appends the shards' new states to next in sequential order,
// counting them, until a violation or the state budget ends the search.
func (s *search) merge(next []uint32) ([]uint32, stopAt) {
	heads := make([]int, len(s.outs))
	for {
		best := -1
		for sh, out := range s.outs {
			if heads[sh] < len(out) && (best < 0 || out[heads[sh]].pos < s.outs[best][heads[best]].pos) {
				best = sh
			}
		}
		if best < 0 {
			return next, stopAt{}
		}
		ns := s.outs[best][heads[best]]
		heads[best]++
		if ns.full {
			return next, stopAt{full: true}
		}
		// The budget is exceeded by a new state beyond it, not reached by
		// the last one: a model of exactly maxStates states is complete.
		if s.res.States >= s.maxStates {
			return next, stopAt{full: true}
		}
		s.res.States++
		var k []uint64
		if s.compact != nil {
			// Number the state, link it to its parent, keep its words.
			W := s.p.words
			c := s.bufs[ns.src].cands[best][ns.at]
			k = s.bufs[ns.src].words[best][int(ns.at)*W : int(ns.at+1)*W]
			ns.id = s.links.n
			s.links.add(c.parent, c.act)
			s.nextWords = append(s.nextWords, k...)
			if ns.bad {
				s.badWords = slices.Clone(k)
			}
		} else if s.visit != nil {
			k = s.seen.state(ns.id)
		}
		if s.visit != nil {
			s.visit(k)
		}
		if ns.bad {
			return next, stopAt{bad: true, id: ns.id}
		}
		next = append(next, ns.id)
	}
}
