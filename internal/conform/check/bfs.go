// Package check is AgentConform's explicit-state model checker: a
// breadth-first search over a compiled IR model, one run per property,
// returning the shortest counterexample as an ITF trace.
//
// The search is level-synchronous, and a level is taken in blocks of a few
// thousand states. Workers expand contiguous chunks of a block into private
// buffers, each successor filed under the shard of the visited set its hash
// picks; then one goroutine per shard inserts that shard's successors in
// the order a sequential BFS would meet them, and a merge lists the new
// states in that order. The states found, their count, every state's first
// parent and the first violating state (hence the counterexample) are those
// of a sequential BFS, whatever the number of workers; the successors held
// in memory at once are those of one block, not of a level.
//
//	block of level d ──┬─ worker 0: expand ─► buf 0 ─┬─► shard 0: insert in order ─┬─► merge by
//	                   └─ worker 1: expand ─► buf 1 ─┴─► shard 1: insert in order ─┘   position ─► level d+1
//
// A Program is immutable; Check may be called concurrently on one Program.
package check

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
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
	// Store is how visited states are kept (see StoreMode); "" is exact.
	// The partial modes bound a check's memory per state (hash
	// compaction) or in total (bitstate) at the price of a "holds" that
	// is not a proof: see Result.Coverage. Leads-to properties are always
	// checked exactly.
	Store StoreMode
	// BitstateLog2 is the bitstate array's size, 2^BitstateLog2 bits
	// (pan -w); 0 means DefaultBitstateLog2. BitstateHashes is the bits
	// set per state (pan -k); 0 means DefaultBitstateHashes.
	BitstateLog2, BitstateHashes int
}

// Validate reports a bad store configuration, naming the option.
func (o Options) Validate() error {
	if _, err := ParseStore(string(o.Store)); err != nil {
		return err
	}
	if o.Store != StoreBitstate && (o.BitstateLog2 != 0 || o.BitstateHashes != 0) {
		return fmt.Errorf("bitstate bits and hashes apply only to the bitstate store, not %s", o.storeMode())
	}
	if o.BitstateLog2 != 0 && (o.BitstateLog2 < MinBitstateLog2 || o.BitstateLog2 > MaxBitstateLog2) {
		return fmt.Errorf("bitstate array of 2^%d bits: want 2^%d to 2^%d", o.BitstateLog2, MinBitstateLog2, MaxBitstateLog2)
	}
	if o.BitstateHashes < 0 || o.BitstateHashes > MaxBitstateHash {
		return fmt.Errorf("%d bitstate hashes: want 1 to %d", o.BitstateHashes, MaxBitstateHash)
	}
	return nil
}

func (o Options) storeMode() StoreMode {
	if o.Store == "" {
		return StoreExact
	}
	return o.Store
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
	// Edges and Fired count the states expanded: all of them for Holds;
	// for a search that stopped, those of the blocks expanded so far.
	Trace   *Trace // the shortest counterexample, for Violated
	Elapsed time.Duration
	// Coverage is set by a partial search (hash compaction, bitstate): a
	// Holds result then means no violation was found among the states
	// the search told apart, not that none exists (see Label). A
	// Violated result is real: its trace was replayed on the model.
	Coverage *Coverage
}

// Check explores p breadth-first and reports whether property (an id of
// the model's properties) holds in every reachable state; with an empty
// property it explores the whole reachable state space (for coverage and
// state counts). It returns an error only for a bad property id or bad
// Options; budgets and cancellation give an Incomplete result.
func Check(ctx context.Context, p *Program, property string, opts Options) (*Result, error) {
	return run(ctx, p, property, opts, nil)
}

// run is Check, calling visit (when not nil) with every state stored, in
// BFS order, from the checking goroutine.
func run(ctx context.Context, p *Program, property string, opts Options, visit func([]uint64)) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
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
	s := &search{p: p, trans: trans, actIndex: actIndex, inv: inv, visit: visit, workers: workers,
		maxStates: maxStates, res: res}
	mode := opts.storeMode()
	log2, hashes := cmp.Or(opts.BitstateLog2, DefaultBitstateLog2), cmp.Or(opts.BitstateHashes, DefaultBitstateHashes)
	switch mode {
	case StoreExact:
		s.seen = newVisited(p.words, min(workers, maxShards))
	case StoreHashCompact:
		s.compact = newFingerprints(min(workers, maxShards))
	case StoreBitstate:
		s.compact = newBitstate(log2, hashes, min(workers, maxShards))
	}
	if s.compact != nil {
		s.links = &links{}
		s.maxStates = min(s.maxStates, math.MaxUint32-1) // states are numbered with 32 bits
	}
	finish := func(status Status, reason string, depth int) (*Result, error) {
		res.Status, res.Reason, res.Depth = status, reason, depth
		if s.compact != nil {
			res.Coverage = newCoverage(mode, log2, hashes, res.States)
		}
		res.Elapsed = time.Since(start)
		if opts.Progress != nil {
			el := res.Elapsed
			opts.Progress(Progress{States: res.States, Depth: depth, Elapsed: el,
				Rate: float64(res.States) / max(el.Seconds(), 1e-9)})
		}
		return res, nil
	}
	h := hashWords(p.init)
	var first uint32 // the initial state's id
	if s.compact != nil {
		s.compact.insert(s.compact.shardOf(h), p.init, h)
		s.links.add(0, 0)
		s.nextWords = slices.Clone(p.init)
	} else {
		local, _, _ := s.seen.shards[s.seen.shardOf(h)].insert(p.init, h, noParent, 0)
		first = s.seen.id(s.seen.shardOf(h), local)
	}
	res.States = 1
	if visit != nil {
		visit(p.init)
	}
	if inv != nil && inv(p.init) == 0 {
		res.Trace = &Trace{Model: p.model, Property: property, Steps: []Step{{Action: -1, Values: p.values(p.init)}}}
		return finish(Violated, "", 0)
	}

	lastReport := start
	frontier := []uint32{first}
	for depth := 0; len(frontier) > 0; depth++ {
		if s.compact != nil {
			// The next level becomes the current one; the one expanded
			// before it is let go.
			s.front, s.nextWords, s.frontBase = s.nextWords, s.front[:0], frontier[0]
		}
		if opts.MaxDepth > 0 && depth >= opts.MaxDepth {
			return finish(Incomplete, "max depth", depth)
		}
		var next []uint32
		for lo := 0; lo < len(frontier); lo += blockStates * workers {
			if err := ctx.Err(); err != nil {
				return finish(Incomplete, "cancelled", depth)
			}
			var stop stopAt
			next, stop = s.block(frontier[lo:min(lo+blockStates*workers, len(frontier))], next)
			switch {
			case stop.bad && s.compact != nil:
				tr, err := p.replayTrace(s.links, stop.id, s.badWords, inv, property)
				if err != nil {
					// Cannot happen if every link is right; if one is not,
					// say so rather than print a trace that is not one.
					return finish(Incomplete, "counterexample did not replay ("+err.Error()+")", depth+1)
				}
				res.Trace = tr
				return finish(Violated, "", depth+1)
			case stop.bad:
				res.Trace = p.traceTo(s.seen, stop.id, property)
				return finish(Violated, "", depth+1)
			case stop.full:
				return finish(Incomplete, "max states", depth+1)
			}
		}
		frontier = next
		if len(frontier) == 0 {
			return finish(Holds, "", depth)
		}
		if opts.Progress != nil && time.Since(lastReport) >= every {
			lastReport = time.Now()
			el := time.Since(start)
			opts.Progress(Progress{States: res.States, Queue: len(frontier), Depth: depth + 1, Elapsed: el,
				Rate: float64(res.States) / max(el.Seconds(), 1e-9)})
		}
	}
	return finish(Holds, "", 0)
}
