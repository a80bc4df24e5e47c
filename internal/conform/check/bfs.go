// Package check is AgentConform's explicit-state model checker: a
// breadth-first search over a compiled IR model, one run per property,
// returning the shortest counterexample as an ITF trace.
//
// The search is level-synchronous. Each BFS level's frontier is cut into
// contiguous chunks, one per worker; workers expand their chunk in order
// into private buffers, reading (never writing) the visited set; then one
// goroutine merges the buffers in chunk order, inserting new states. The
// merge order is the order a sequential BFS would use, so the states found,
// their count, and the first violating state (hence the counterexample) do
// not depend on the number of workers.
//
//	level d frontier ──┬─ worker 0: expand chunk 0 ─► buf 0 ─┐
//	                   ├─ worker 1: expand chunk 1 ─► buf 1 ─┼─► merge in order ─► level d+1
//	                   └─ ...                                ┘   (visited set written here only)
//
// A Program is immutable; Check may be called concurrently on one Program.
package check

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// Status is the outcome of one check.
type Status string

const (
	Holds      Status = "holds"      // no reachable state violates the property
	Violated   Status = "violated"   // Trace leads to a violating state
	Incomplete Status = "incomplete" // a budget ran out or the context ended first
)

// Options bounds and configures a check. The zero value explores without a
// depth bound, up to DefaultMaxStates states, on GOMAXPROCS workers.
type Options struct {
	MaxStates int // distinct states stored; 0 means DefaultMaxStates
	MaxDepth  int // BFS levels beyond the initial state; 0 means unbounded
	Workers   int // 0 means GOMAXPROCS
	// NoAdversary leaves out Adversary transitions, to learn whether a
	// violation needs the attacker.
	NoAdversary bool
	// Progress, when set, is called from the checking goroutine after a
	// level, at most every ProgressEvery (default 250ms), and once at the
	// end.
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// DefaultMaxStates bounds a check whose Options say nothing.
const DefaultMaxStates = 10_000_000

// Progress is a snapshot of a running check.
type Progress struct {
	States  int           // distinct states stored so far
	Queue   int           // states waiting in the next frontier
	Depth   int           // the level being expanded
	Elapsed time.Duration //
	Rate    float64       // states per second so far
}

// Result is the outcome of checking one property (or of exploring the
// whole model when the property is empty).
type Result struct {
	Model       string
	Property    string
	Principle   string
	Class       string
	Guarded     bool // the model ran behind warden (ir.Model.Guarded)
	NoAdversary bool // Adversary transitions were left out
	Status      Status
	Reason      string // for Incomplete: "max states", "max depth", "cancelled"
	States      int    // distinct states stored
	Edges       int    // transitions fired, including ones leading to known states
	Depth       int    // levels explored; for Violated, the trace length
	Fired       []int  // per transition of the model: how often it fired
	Trace       *Trace // the shortest counterexample, for Violated
	Elapsed     time.Duration
}

// succ is a new state found by a worker; its words are in the worker's
// buffer at the same index.
type succ struct {
	hash   uint64
	parent uint32
	act    uint16
	bad    bool
}

// succBuf is one worker's output for a level.
type succBuf struct {
	words []uint64 // succs[i]'s state is words[i*W : (i+1)*W]
	succs []succ
}

// Check explores p breadth-first and reports whether property (an id of
// the model's properties) holds in every reachable state; with an empty
// property it explores the whole reachable state space (for coverage and
// state counts). It returns an error only for a bad property id; budgets
// and cancellation give an Incomplete result.
func Check(ctx context.Context, p *Program, property string, opts Options) (*Result, error) {
	m := p.model
	res := &Result{Model: m.Name, Property: property, Guarded: m.IsGuarded(), NoAdversary: opts.NoAdversary,
		Fired: make([]int, len(p.trans))}
	var inv evalFn
	if property != "" {
		pr, ok := m.Property(property)
		if !ok {
			return nil, fmt.Errorf("model %s has no property %q", m.Name, property)
		}
		inv = p.props[property]
		res.Principle, res.Class = pr.Principle, pr.Class
	}
	maxStates := opts.MaxStates
	if maxStates <= 0 {
		maxStates = DefaultMaxStates
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	every := opts.ProgressEvery
	if every <= 0 {
		every = 250 * time.Millisecond
	}
	trans := p.trans
	if opts.NoAdversary {
		trans = make([]ctrans, 0, len(p.trans))
		for _, t := range p.trans {
			if t.t.Kind != ir.Adversary {
				trans = append(trans, t)
			}
		}
	}
	actIndex := make([]uint16, len(trans)) // index in trans → index in the model
	for i := range trans {
		for j := range p.trans {
			if p.trans[j].t == trans[i].t {
				actIndex[i] = uint16(j)
			}
		}
	}

	start := time.Now()
	lastReport := start

	W := p.words
	st := newStore(W)
	st.add(p.init, hashWords(p.init), noParent, 0)
	finish := func(status Status, reason string, depth int) (*Result, error) {
		res.Status, res.Reason, res.States, res.Depth = status, reason, st.len(), depth
		res.Elapsed = time.Since(start)
		if opts.Progress != nil {
			el := res.Elapsed
			opts.Progress(Progress{States: res.States, Depth: depth, Elapsed: el,
				Rate: float64(res.States) / max(el.Seconds(), 1e-9)})
		}
		return res, nil
	}
	if inv != nil && inv(p.init) == 0 {
		res.Trace = p.trace(st, 0, property)
		return finish(Violated, "", 0)
	}

	frontier := []uint32{0}
	bufs := make([]succBuf, workers)
	for depth := 0; len(frontier) > 0; depth++ {
		if err := ctx.Err(); err != nil {
			return finish(Incomplete, "cancelled", depth)
		}
		if opts.MaxDepth > 0 && depth >= opts.MaxDepth {
			return finish(Incomplete, "max depth", depth)
		}
		// Expand: small frontiers on this goroutine, large ones in parallel.
		n := workers
		if len(frontier) < 256*workers {
			n = 1
		}
		chunk := (len(frontier) + n - 1) / n
		var wg sync.WaitGroup
		var cancelled bool
		var mu sync.Mutex
		edges := make([]int, n)
		fired := make([][]int, n)
		for w := 0; w < n; w++ {
			lo, hi := w*chunk, min((w+1)*chunk, len(frontier))
			bufs[w].words, bufs[w].succs = bufs[w].words[:0], bufs[w].succs[:0]
			fired[w] = make([]int, len(trans))
			if lo >= hi {
				continue
			}
			expand := func(w int) {
				buf := bufs[w]
				next := make([]uint64, W)
				for i, si := range frontier[lo:hi] {
					if i&4095 == 4095 && ctx.Err() != nil {
						mu.Lock()
						cancelled = true
						mu.Unlock()
						break
					}
					cur := st.state(si)
					for ti := range trans {
						if !trans[ti].fire(cur, next) {
							continue
						}
						edges[w]++
						fired[w][ti]++
						h := hashWords(next)
						if st.find(next, h) {
							continue
						}
						buf.words = append(buf.words, next...)
						buf.succs = append(buf.succs, succ{hash: h, parent: si, act: actIndex[ti], bad: inv != nil && inv(next) == 0})
					}
				}
				bufs[w] = buf
			}
			if n == 1 {
				expand(w)
				continue
			}
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				expand(w)
			}(w)
		}
		wg.Wait()
		if cancelled {
			return finish(Incomplete, "cancelled", depth)
		}
		for w := 0; w < n; w++ {
			res.Edges += edges[w]
			for ti, c := range fired[w] {
				res.Fired[actIndex[ti]] += c
			}
		}
		// Merge in chunk order: the order of a sequential BFS.
		next := make([]uint32, 0, len(frontier))
		for w := 0; w < n; w++ {
			for i, s := range bufs[w].succs {
				k := bufs[w].words[i*W : (i+1)*W]
				if st.find(k, s.hash) {
					continue
				}
				idx := st.add(k, s.hash, s.parent, s.act)
				if s.bad {
					res.Trace = p.trace(st, idx, property)
					return finish(Violated, "", depth+1)
				}
				if st.len() >= maxStates {
					return finish(Incomplete, "max states", depth+1)
				}
				next = append(next, idx)
			}
		}
		frontier = next
		if len(frontier) > 0 {
			res.States = st.len()
			if opts.Progress != nil && time.Since(lastReport) >= every {
				lastReport = time.Now()
				el := time.Since(start)
				opts.Progress(Progress{States: st.len(), Queue: len(frontier), Depth: depth + 1, Elapsed: el,
					Rate: float64(st.len()) / max(el.Seconds(), 1e-9)})
			}
		} else {
			return finish(Holds, "", depth)
		}
	}
	return finish(Holds, "", 0)
}
