package check

// Leads-to under fairness.
//
// A leads-to property P ~> Q is violated by a behaviour (an infinite path;
// a state where nothing is enabled repeats forever) that reaches a state
// where P holds and from there on never meets Q. Under weak fairness only
// fair behaviours count: every transition that is enabled in every state
// from some point on is taken infinitely often.
//
// A finite graph has such a behaviour exactly when it has a lasso: a path
// to a P ∧ ¬Q state, then a path through ¬Q states into a cycle of ¬Q
// states on which every transition is disabled in some state or labels
// some step (a deadlocked ¬Q state is such a cycle: it stutters, and
// nothing is enabled). The search:
//
//	explore the whole reachable graph (BFS; numbers are BFS order)
//	  │
//	  ├─► strongly connected components of the ¬Q subgraph (Tarjan)
//	  │     a component is fair when it has a step inside it (or is a
//	  │     deadlock) and each transition is disabled in one of its
//	  │     states or labels one of its inner steps; weak fairness needs
//	  │     no refinement: a cycle through every state and step of a fair
//	  │     component is fair, and no cycle in an unfair one is
//	  ├─► bad = ¬Q states that reach a fair component through ¬Q states
//	  └─► the first P state (BFS order) that is bad: shortest prefix to it,
//	      shortest ¬Q path into a fair component, then a cycle inside the
//	      component that meets every fairness obligation and closes
//
// Without fairness (ir.NoFairness) a component is fair when it has a step
// inside it or is a deadlock. SPIN's acceptance-cycle search over the
// emitted never claim (package promela) checks the same behaviours.

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// Cycle is where a lasso counterexample loops: the last step of the trace
// is followed by Action (an index into Model.Transitions), which leads back
// to Steps[Start]. Action is -1 when the cycle is a single deadlocked state
// that repeats (stutters) because no transition is enabled.
type Cycle struct {
	Start  int
	Action int
}

// Verify checks one property of any kind: an invariant with Check, a
// leads-to property with CheckLeadsTo. It is what callers that do not care
// about the kind should call. On a reduced program (Program.Reduced) an
// invariant is checked over one state per orbit and its counterexample is
// turned back into an execution of the model; a leads-to property is
// checked on the unreduced program (the lasso search's fairness is per
// transition instance, which a renaming does not preserve).
func Verify(ctx context.Context, p *Program, property string, opts Options) (*Result, error) {
	if pr, ok := p.model.Property(property); ok && pr.Kind == ir.LeadsTo {
		return CheckLeadsTo(ctx, p, property, opts)
	}
	res, err := Check(ctx, p, property, opts)
	if err == nil && res.Trace != nil && p.sym != nil {
		res.Trace, err = p.concrete(res.Trace, opts.NoAdversary)
	}
	return res, err
}

// lgraph is the whole reachable graph, states numbered in BFS order.
type lgraph struct {
	words   int
	keys    []uint64 // state i is keys[i*words:(i+1)*words]
	index   map[string]uint32
	parent  []uint32
	pact    []int32    // the transition (model index) that first reached the state
	depth   []int32    //
	succ    [][]ledge  // outgoing steps
	enabled [][]uint64 // per state, a bit per transition (position in trans)
}

type ledge struct {
	to  uint32
	act int32 // position in trans
}

func (g *lgraph) state(i uint32) []uint64 {
	return g.keys[int(i)*g.words : (int(i)+1)*g.words]
}

// keyOf is k's words as a map key.
func keyOf(k []uint64) string {
	key := make([]byte, len(k)*8)
	for i, w := range k {
		binary.LittleEndian.PutUint64(key[i*8:], w)
	}
	return string(key)
}

func (g *lgraph) add(k []uint64, parent uint32, act, depth int32) uint32 {
	i := uint32(len(g.parent))
	g.keys = append(g.keys, k...)
	g.index[keyOf(k)] = i
	g.parent = append(g.parent, parent)
	g.pact = append(g.pact, act)
	g.depth = append(g.depth, depth)
	g.succ = append(g.succ, nil)
	g.enabled = append(g.enabled, nil)
	return i
}

func (g *lgraph) find(k []uint64) (uint32, bool) {
	i, ok := g.index[keyOf(k)]
	return i, ok
}

// CheckLeadsTo checks the leads-to property named property (From ~> To)
// under the property's fairness, over every reachable state. A violation's
// Trace is a lasso: Steps are the prefix and then the cycle, and
// Trace.Cycle says where the cycle starts and how it closes. Budgets and
// cancellation give an Incomplete result.
func CheckLeadsTo(ctx context.Context, p *Program, property string, opts Options) (*Result, error) {
	p = p.Unreduced() // see Verify
	m := p.model
	pr, ok := m.Property(property)
	if !ok {
		return nil, fmt.Errorf("model %s has no property %q", m.Name, property)
	}
	if pr.Kind != ir.LeadsTo || pr.From == nil || pr.To == nil {
		return nil, fmt.Errorf("model %s: property %q is not a leads-to property", m.Name, property)
	}
	start := time.Now()
	res := &Result{Model: m.Name, Property: property, Principle: pr.Principle, Class: pr.Class,
		Guarded: m.IsGuarded(), NoAdversary: opts.NoAdversary, Fired: make([]int, len(p.trans))}
	finish := func(status Status, reason string) (*Result, error) {
		res.Status, res.Reason, res.Elapsed = status, reason, time.Since(start)
		if opts.Progress != nil {
			el := res.Elapsed
			opts.Progress(Progress{States: res.States, Depth: res.Depth, Elapsed: el,
				Rate: float64(res.States) / max(el.Seconds(), 1e-9)})
		}
		return res, nil
	}
	var trans []int // positions in p.trans of the transitions that run
	for i := range p.trans {
		if !opts.NoAdversary || p.trans[i].t.Kind != ir.Adversary {
			trans = append(trans, i)
		}
	}
	maxStates := opts.MaxStates
	if maxStates <= 0 {
		maxStates = DefaultMaxStates
	}

	// 1. The reachable graph.
	g := &lgraph{words: p.words, index: map[string]uint32{}}
	g.add(p.init, noParent, -1, 0)
	ewords := (len(trans) + 63) / 64
	next := make([]uint64, p.words)
	for i := uint32(0); int(i) < len(g.parent); i++ {
		if i&4095 == 4095 && ctx.Err() != nil {
			res.States = len(g.parent)
			return finish(Incomplete, "cancelled")
		}
		if opts.MaxDepth > 0 && int(g.depth[i]) >= opts.MaxDepth {
			res.States, res.Depth = len(g.parent), int(g.depth[i])
			return finish(Incomplete, "max depth")
		}
		en := make([]uint64, ewords)
		for pos, ti := range trans {
			if !p.trans[ti].fire(g.state(i), next) {
				continue
			}
			en[pos/64] |= 1 << (pos % 64)
			res.Edges++
			res.Fired[ti]++
			j, known := g.find(next)
			if !known {
				if len(g.parent) >= maxStates {
					res.States = len(g.parent)
					return finish(Incomplete, "max states")
				}
				j = g.add(next, i, int32(ti), g.depth[i]+1)
			}
			g.succ[i] = append(g.succ[i], ledge{to: j, act: int32(pos)})
		}
		g.enabled[i] = en
	}
	n := len(g.parent)
	res.States = n
	res.Depth = int(g.depth[n-1])

	from, to := p.live[property][0], p.live[property][1]
	notQ := make([]bool, n)
	for i := range n {
		notQ[i] = to(g.state(uint32(i))) == 0
	}

	// 2. Components of the ¬Q subgraph, and which are fair.
	comp, ncomp := sccs(g, notQ)
	fair := fairComponents(g, notQ, comp, ncomp, len(trans), pr.Fairness == ir.WeakFairness)

	// 3. Bad states: ¬Q states that reach a fair component through ¬Q.
	bad := make([]bool, n)
	pred := make([][]uint32, n)
	for i := range n {
		if !notQ[i] {
			continue
		}
		for _, e := range g.succ[i] {
			if notQ[e.to] {
				pred[e.to] = append(pred[e.to], uint32(i))
			}
		}
	}
	var queue []uint32
	for i := range n {
		if notQ[i] && fair[comp[i]] {
			bad[i] = true
			queue = append(queue, uint32(i))
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, q := range pred[s] {
			if !bad[q] {
				bad[q] = true
				queue = append(queue, q)
			}
		}
	}

	// 4. The first P state that is bad.
	s0 := -1
	for i := range n {
		if bad[i] && from(g.state(uint32(i))) != 0 {
			s0 = i
			break
		}
	}
	if s0 < 0 {
		return finish(Holds, "")
	}
	res.Trace = lasso(p, g, uint32(s0), notQ, comp, fair, trans, pr.Fairness == ir.WeakFairness, property)
	res.Depth = res.Trace.Len()
	return finish(Violated, "")
}

// sccs numbers the strongly connected components of the subgraph of g on
// the states in (iterative Tarjan). States outside get -1.
func sccs(g *lgraph, in []bool) ([]int32, int) {
	n := len(in)
	comp := make([]int32, n)
	low := make([]int32, n)
	num := make([]int32, n) // 0: not visited; else visit order + 1
	onStack := make([]bool, n)
	for i := range comp {
		comp[i] = -1
	}
	var stack []uint32
	type frame struct {
		v    uint32
		edge int
	}
	var call []frame
	counter, ncomp := int32(0), 0
	for root := range n {
		if !in[root] || num[root] != 0 {
			continue
		}
		call = append(call, frame{v: uint32(root)})
		counter++
		num[root], low[root] = counter, counter
		stack = append(stack, uint32(root))
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if f.edge < len(g.succ[v]) {
				w := g.succ[v][f.edge].to
				f.edge++
				if !in[w] {
					continue
				}
				if num[w] == 0 {
					counter++
					num[w], low[w] = counter, counter
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{v: w})
				} else if onStack[w] {
					low[v] = min(low[v], num[w])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				u := call[len(call)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] == num[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = int32(ncomp)
					if w == v {
						break
					}
				}
				ncomp++
			}
		}
	}
	return comp, ncomp
}

// fairComponents reports, per component, whether a behaviour can stay in
// it forever: it has a step inside it or is a deadlocked state, and, under
// weak fairness, every transition is disabled in one of its states or
// labels one of its inner steps.
func fairComponents(g *lgraph, in []bool, comp []int32, ncomp, ntrans int, weak bool) []bool {
	ewords := (ntrans + 63) / 64
	taken := make([][]uint64, ncomp)    // transitions labelling an inner step
	disabled := make([][]uint64, ncomp) // transitions disabled in some state
	inner := make([]bool, ncomp)
	dead := make([]bool, ncomp)
	for c := range ncomp {
		taken[c], disabled[c] = make([]uint64, ewords), make([]uint64, ewords)
	}
	for i := range in {
		if !in[i] {
			continue
		}
		c := comp[i]
		if len(g.succ[i]) == 0 {
			dead[c] = true
		}
		for w := range ewords {
			disabled[c][w] |= ^g.enabled[i][w]
		}
		for _, e := range g.succ[i] {
			if comp[e.to] == c {
				inner[c] = true
				taken[c][e.act/64] |= 1 << (e.act % 64)
			}
		}
	}
	fair := make([]bool, ncomp)
	for c := range ncomp {
		fair[c] = inner[c] || dead[c]
		if !weak || !fair[c] {
			continue
		}
		for t := range ntrans {
			if (taken[c][t/64]|disabled[c][t/64])>>(t%64)&1 == 0 {
				fair[c] = false
				break
			}
		}
	}
	return fair
}

// lasso builds the counterexample from the bad P state s0: the shortest
// path to s0, the shortest ¬Q path from s0 into a fair component, and a
// cycle in that component that meets every fairness obligation.
func lasso(p *Program, g *lgraph, s0 uint32, notQ []bool, comp []int32, fair []bool, trans []int, weak bool, property string) *Trace {
	type hop struct {
		state uint32
		act   int32 // model index of the transition into state; -1 for the first
	}
	var path []hop
	for i := s0; ; i = g.parent[i] {
		path = append(path, hop{state: i, act: g.pact[i]})
		if g.parent[i] == noParent {
			break
		}
	}
	for l, r := 0, len(path)-1; l < r; l, r = l+1, r-1 {
		path[l], path[r] = path[r], path[l]
	}
	// bfsTo finds the shortest path from src through states allowed by
	// within to a state where goal holds, as hops after src.
	bfsTo := func(src uint32, within func(uint32) bool, goal func(uint32) bool) []hop {
		if goal(src) {
			return nil
		}
		prev := map[uint32]hop{src: {state: noParent}}
		queue := []uint32{src}
		for len(queue) > 0 {
			s := queue[0]
			queue = queue[1:]
			for _, e := range g.succ[s] {
				if _, seen := prev[e.to]; seen || !within(e.to) {
					continue
				}
				prev[e.to] = hop{state: s, act: int32(trans[e.act])}
				if goal(e.to) {
					var out []hop
					for v := e.to; v != src; v = prev[v].state {
						out = append(out, hop{state: v, act: prev[v].act})
					}
					for l, r := 0, len(out)-1; l < r; l, r = l+1, r-1 {
						out[l], out[r] = out[r], out[l]
					}
					return out
				}
				queue = append(queue, e.to)
			}
		}
		return nil
	}
	inFair := func(s uint32) bool { return notQ[s] && fair[comp[s]] }
	path = append(path, bfsTo(s0, func(s uint32) bool { return notQ[s] }, inFair)...)
	entry := path[len(path)-1].state
	c := comp[entry]
	inC := func(s uint32) bool { return comp[s] == c }
	loopStart := len(path) - 1

	// The cycle: from entry, meet each obligation not yet met (a state
	// where the transition is disabled, or a step labelled by it), then
	// return to entry.
	met := make([]bool, len(trans))
	visit := func(h hop) {
		en := g.enabled[h.state]
		for t := range trans {
			if en[t/64]>>(t%64)&1 == 0 {
				met[t] = true
			}
		}
	}
	visit(path[loopStart])
	cycle := []hop{}
	cur := entry
	step := func(h hop) {
		if h.act >= 0 {
			for pos, ti := range trans {
				if int32(ti) == h.act {
					met[pos] = true
				}
			}
		}
		visit(h)
		cycle = append(cycle, h)
		cur = h.state
	}
	if weak {
		for t := range trans {
			if met[t] {
				continue
			}
			// Go to a state of the component where t is disabled or from
			// which a step labelled t stays in the component; take that step.
			hops := bfsTo(cur, inC, func(s uint32) bool {
				if g.enabled[s][t/64]>>(t%64)&1 == 0 {
					return true
				}
				for _, e := range g.succ[s] {
					if int(e.act) == t && inC(e.to) {
						return true
					}
				}
				return false
			})
			for _, h := range hops {
				step(h)
			}
			if met[t] {
				continue
			}
			for _, e := range g.succ[cur] {
				if int(e.act) == t && inC(e.to) {
					step(hop{state: e.to, act: int32(trans[e.act])})
					break
				}
			}
		}
	}
	// Close the cycle: back to entry, with at least one step unless the
	// entry is a deadlock (it stutters).
	closing := -1
	if len(cycle) == 0 && len(g.succ[entry]) > 0 {
		for _, e := range g.succ[entry] {
			if inC(e.to) {
				step(hop{state: e.to, act: int32(trans[e.act])})
				break
			}
		}
	}
	if len(cycle) > 0 {
		// Back to entry (nothing to add when the last hop is already
		// there); the last hop, which arrives at entry, closes the cycle.
		cycle = append(cycle, bfsTo(cur, inC, func(s uint32) bool { return s == entry })...)
		last := cycle[len(cycle)-1]
		closing = int(last.act)
		cycle = cycle[:len(cycle)-1]
	}
	path = append(path, cycle...)
	steps := make([]Step, len(path))
	for i, h := range path {
		act := int(h.act)
		if i == 0 {
			act = -1
		}
		steps[i] = Step{Action: act, Values: p.values(g.state(h.state))}
	}
	return &Trace{Model: p.model, Property: property, Steps: steps, Cycle: &Cycle{Start: loopStart, Action: closing}}
}
