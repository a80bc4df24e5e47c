package check

// Symmetry reduction.
//
// A model whose domains are declared symmetric (ir.Domain.Symmetric) treats
// their elements alike; the typecheck refuses every expression that tells
// them apart. Renaming the elements by a permutation π then maps states to
// states, transition instances to instances (A(a=1) to A(a=π(1))) and
// leaves every invariant's value unchanged, so the reachable states fall
// into orbits {π(s)} whose members all satisfy or all violate a property.
// A reduced program stores one state per orbit, its canonical
// representative: of all π(s), the one whose packed words are least
// (lexicographically, word 0 first).
//
//	successor s ──► π1(s) … πn(s) (every permutation, precomputed as slot
//	                │               moves with value tables)
//	                └─► least words = canonical state ──► visited set
//
// π acts on a state by moving array cells (an index over a symmetric domain
// is renamed), renaming values of the domain, and renaming set members
// (a bit permutation, tabled). The search over canonical states finds every
// orbit, with its shortest distance from the initial state (which every
// permutation fixes, since its init treats the elements alike), so
// verdicts and counterexample lengths are the unreduced search's; the state
// count is the number of orbits.
//
// A counterexample found over canonical states is a chain c0 → c1 → … of
// representatives. concrete turns it back into an execution of the model:
// from the concrete state s (with canon(s) = c_i) it fires each transition
// until one gives a successor whose canonical form is c_(i+1); one exists,
// since s = σ(c_i) for some σ and σ maps the step c_i → x to a step
// s → σ(x) of the same orbit. The printed trace is a real run of the
// unreduced model and ends in a violating state.

import (
	"fmt"
	"strings"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// MaxPermutations bounds the renamings a reduced program enumerates (6!
// for one domain of 6 elements); a model with more is checked unreduced.
const MaxPermutations = 720

// symmetry is the group of renamings of a program's symmetric domains,
// without the identity, each as the slot moves it makes.
type symmetry struct {
	perms   []perm
	domains []string
}

type perm struct{ moves []move }

// move copies one variable's value from slot from of the input to slot to
// of the output, renamed through vmap (indexed by the stored value; nil:
// unchanged).
type move struct {
	from, to slot
	vmap     []uint64
}

func (pm *perm) apply(in, out []uint64) {
	copy(out, in)
	for i := range pm.moves {
		mv := &pm.moves[i]
		v := in[mv.from.word] >> mv.from.shift & mv.from.mask
		if mv.vmap != nil {
			v = mv.vmap[v]
		}
		out[mv.to.word] = out[mv.to.word]&^(mv.to.mask<<mv.to.shift) | v<<mv.to.shift
	}
}

func lessWords(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// canon replaces k by its orbit's canonical representative.
func (sy *symmetry) canon(k []uint64) {
	var bufA, bufB [8]uint64
	best, tmp := bufA[:0], bufB[:0]
	if len(k) > len(bufA) {
		best, tmp = make([]uint64, 0, len(k)), make([]uint64, 0, len(k))
	}
	best, tmp = append(best, k...), tmp[:len(k)]
	for i := range sy.perms {
		sy.perms[i].apply(k, tmp)
		if lessWords(tmp, best) {
			best, tmp = tmp, best
		}
	}
	copy(k, best)
}

// Reduced returns the program that stores one state per orbit of the
// model's symmetric domains (see the top of this file), and a note for
// people: "symmetry: 6 permutations of Agent", or why p is returned
// unreduced (no symmetric domain, too many permutations). Check and Verify
// on the reduced program give the verdicts of p; Verify's counterexamples
// are executions of the model; a leads-to property is checked on p
// itself. Permutations says how many renamings the reduced program uses.
func (p *Program) Reduced() (*Program, string) {
	if p.sym != nil {
		return p, p.SymmetryNote()
	}
	doms := p.model.SymmetricDomains()
	if len(doms) == 0 {
		return p, "symmetry: none declared"
	}
	total := 1
	var names []string
	for _, d := range doms {
		names = append(names, d.Name)
		for i := 2; i <= d.Type.Size(); i++ {
			total *= i
			if total > MaxPermutations {
				return p, fmt.Sprintf("symmetry: off, %s has more than %d permutations", strings.Join(names, " × "), MaxPermutations)
			}
		}
	}
	sy := &symmetry{domains: names}
	for _, g := range group(doms) {
		pm := p.permutation(g)
		if pm.moves != nil {
			sy.perms = append(sy.perms, pm)
		}
	}
	r := *p
	r.sym, r.full = sy, p
	r.trans = make([]ctrans, len(p.trans))
	for i, ct := range p.trans {
		ct.sym = sy
		r.trans[i] = ct
	}
	r.init = append([]uint64(nil), p.init...)
	sy.canon(r.init)
	return &r, r.SymmetryNote()
}

// Permutations is the number of renamings a reduced program's states are
// taken up to, the identity included; 0 for a program that is not reduced.
func (p *Program) Permutations() int {
	if p.sym == nil {
		return 0
	}
	return len(p.sym.perms) + 1
}

// SymmetryNote says how p's states are stored: "symmetry: 6 permutations
// of Agent", or "" for an unreduced program.
func (p *Program) SymmetryNote() string {
	if p.sym == nil {
		return ""
	}
	return fmt.Sprintf("symmetry: %d permutations of %s", p.Permutations(), strings.Join(p.sym.domains, " × "))
}

// Unreduced is the program p was reduced from, or p.
func (p *Program) Unreduced() *Program {
	if p.full != nil {
		return p.full
	}
	return p
}

// renaming maps each symmetric domain's name to a permutation of its
// element positions (ir.Type.Bit): position i goes to position g[d][i].
type renaming map[string][]int

// group lists every renaming of doms, the identity first.
func group(doms []*ir.Domain) []renaming {
	out := []renaming{{}}
	for _, d := range doms {
		var next []renaming
		for _, g := range out {
			for _, pi := range permutations(d.Type.Size()) {
				h := renaming{}
				for k, v := range g {
					h[k] = v
				}
				h[d.Name] = pi
				next = append(next, h)
			}
		}
		out = next
	}
	return out
}

// permutations lists the permutations of 0..n-1, the identity first.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, q := range permutations(n - 1) {
		// Insert n-1 at every position, from the end: the identity first.
		for pos := n - 1; pos >= 0; pos-- {
			r := make([]int, 0, n)
			r = append(r, q[:pos]...)
			r = append(r, n-1)
			r = append(r, q[pos:]...)
			out = append(out, r)
		}
	}
	return out
}

// rename maps an encoded value v of the symmetric type t through g.
func rename(t ir.Type, v int, g renaming) int {
	pi := g[t.Sym]
	if pi == nil {
		return v
	}
	return t.Elems()[pi[t.Bit(v)]]
}

// permutation is g as slot moves over p's state layout.
func (p *Program) permutation(g renaming) perm {
	m := p.model
	var pm perm
	for i, v := range m.Vars {
		to := i
		if v.Index != nil {
			a := &m.Arrays[v.Array]
			idx := make([]int, len(v.Index))
			for k, x := range v.Index {
				idx[k] = rename(a.Index[k], x, g)
			}
			to, _ = a.Cell(idx)
		}
		vmap := p.valueMap(v.Type, g)
		if to != i || vmap != nil {
			pm.moves = append(pm.moves, move{from: p.slots[i], to: p.slots[to], vmap: vmap})
		}
	}
	return pm
}

// valueMap tables the renaming of a slot's stored values of type t, or is
// nil when g leaves them alone.
func (p *Program) valueMap(t ir.Type, g renaming) []uint64 {
	switch {
	case t.Kind == ir.Set && t.Elem.Sym != "" && g[t.Elem.Sym] != nil:
		pi := g[t.Elem.Sym]
		n := t.Elem.Size()
		vmap := make([]uint64, 1<<n)
		for s := range vmap {
			for b := range n {
				if s>>b&1 == 1 {
					vmap[s] |= 1 << pi[b]
				}
			}
		}
		return identityNil(vmap)
	case t.Kind != ir.Set && t.Sym != "" && g[t.Sym] != nil:
		lo := 0
		if t.Kind == ir.Int {
			lo = t.Min
		}
		vmap := make([]uint64, t.Size())
		for i, x := range t.Elems() {
			vmap[i] = uint64(rename(t, x, g) - lo)
		}
		return identityNil(vmap)
	}
	return nil
}

func identityNil(vmap []uint64) []uint64 {
	for i, v := range vmap {
		if v != uint64(i) {
			return vmap
		}
	}
	return nil
}

// pack encodes one value per variable into a state's words.
func (p *Program) pack(values []int) []uint64 {
	k := make([]uint64, p.words)
	for i, s := range p.slots {
		s.set(k, values[i])
	}
	return k
}

// concrete turns tr, a path through canonical states of the reduced
// program p, into an execution of the model: the same length, each step a
// transition of the model fired in the state before it, ending in a state
// of the last one's orbit. noAdversary leaves out Adversary transitions,
// as the search did.
func (p *Program) concrete(tr *Trace, noAdversary bool) (*Trace, error) {
	if p.sym == nil || tr == nil || tr.Cycle != nil {
		return tr, nil
	}
	full := p.full
	cur := append([]uint64(nil), full.init...)
	out := &Trace{Model: tr.Model, Property: tr.Property, Steps: []Step{{Action: -1, Values: full.values(cur)}}}
	next := make([]uint64, p.words)
	canon := append([]uint64(nil), cur...)
	if p.sym.canon(canon); !equalWords(canon, p.pack(tr.Steps[0].Values)) {
		return nil, fmt.Errorf("symmetry: the initial state of %s is not the first state of the trace's orbit; the model is not symmetric as declared", p.model.Name)
	}
	for i, st := range tr.Steps[1:] {
		target := p.pack(st.Values)
		// The step's own transition first: it often fits as it is.
		order := append([]int{st.Action}, make([]int, 0, len(full.trans))...)
		for ti := range full.trans {
			if ti != st.Action {
				order = append(order, ti)
			}
		}
		found := false
		for _, ti := range order {
			ct := &full.trans[ti]
			if noAdversary && ct.t.Kind == ir.Adversary || !ct.fire(cur, next) {
				continue
			}
			copy(canon, next)
			p.sym.canon(canon)
			if equalWords(canon, target) {
				cur, next = next, cur
				out.Steps = append(out.Steps, Step{Action: ti, Values: full.values(cur)})
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("symmetry: no transition of %s leads from step %d into the orbit of step %d; the model is not symmetric as declared", p.model.Name, i, i+1)
		}
	}
	return out, nil
}

// Replays reports why tr is not an execution of the model of p that ends
// in a state violating its invariant, or nil when it is: it must start in
// the initial state, and each step's transition, fired in the state
// before it, must give the step's state. On a reduced program the
// unreduced one is used.
func (p *Program) Replays(tr *Trace) error {
	p = p.Unreduced()
	if tr == nil || len(tr.Steps) == 0 {
		return fmt.Errorf("no trace")
	}
	cur := p.pack(tr.Steps[0].Values)
	if !equalWords(cur, p.init) {
		return fmt.Errorf("the trace does not start in the initial state")
	}
	next := make([]uint64, p.words)
	for i, st := range tr.Steps[1:] {
		if st.Action < 0 || st.Action >= len(p.trans) || !p.trans[st.Action].fire(cur, next) || !equalWords(next, p.pack(st.Values)) {
			return fmt.Errorf("step %d is not a step of %s from the state before it", i+1, p.model.Name)
		}
		cur, next = next, cur
	}
	if inv := p.props[tr.Property]; inv != nil && tr.Cycle == nil && inv(cur) != 0 {
		return fmt.Errorf("the last state satisfies %s", tr.Property)
	}
	return nil
}
