package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// Vacuous is a property that holds for a reason that has nothing to do
// with the protocol's behaviour: every condition it reads has the same
// value in every reachable state and no transition could make it false
// even if its guard let it (nothing the model writes ever reaches it), or
// the left side of its implication is never true. A property that some
// transition's writes would break but its guard prevents (the paper's P3,
// kept by "c in caps[a]") holds because of the protocol, not vacuously.
type Vacuous struct {
	Property string
	Pos      ir.Pos
	Why      string
}

// Vacuity explores p's whole reachable state space (all transitions,
// Adversary ones included; at most maxStates states, else it reports
// nothing) and returns the properties that hold vacuously there. A
// property that is violated somewhere is never vacuous.
//
// A property's conditions are its maximal sub-formulas that are not built
// with !, &&, || or =>: comparisons and boolean variables. A leads-to
// property P ~> Q is vacuous when P holds in no reachable state, and
// trivial when Q holds in every reachable state where P does (it holds
// at once, so fairness plays no part).
func Vacuity(ctx context.Context, p *Program, maxStates int) ([]Vacuous, error) {
	type watch struct {
		prop    *ir.Property
		whole   evalFn
		atoms   []*ir.Expr
		evals   []evalFn
		seen    [][2]bool // per atom: seen false, seen true
		premise evalFn    // the left side of a top-level =>, or nil
		premOK  bool      // the premise held somewhere
		broken  bool      // the property is false somewhere
		guarded bool      // a transition's writes, its guard ignored, would make it false
	}
	var ws []*watch
	var ls []*leadsWatch
	for i := range p.model.Properties {
		pr := &p.model.Properties[i]
		if pr.Kind == ir.LeadsTo && pr.From != nil && pr.To != nil {
			ls = append(ls, &leadsWatch{prop: pr, from: p.live[pr.ID][0], to: p.live[pr.ID][1], atOnce: true})
			continue
		}
		if pr.Expr == nil {
			continue
		}
		w := &watch{prop: pr, whole: p.props[pr.ID]}
		collectAtoms(pr.Expr, &w.atoms)
		for _, a := range w.atoms {
			w.evals = append(w.evals, p.compile(a))
		}
		w.seen = make([][2]bool, len(w.atoms))
		if pr.Expr.Op == ir.OpImplies {
			w.premise = p.compile(pr.Expr.Args[0])
		}
		ws = append(ws, w)
	}
	out := make([]uint64, p.words)
	visit := func(k []uint64) {
		for _, w := range ws {
			if w.whole(k) == 0 {
				w.broken = true
			}
			for i := range p.trans {
				if w.guarded {
					break
				}
				if p.trans[i].apply(k, out) && w.whole(out) == 0 {
					w.guarded = true
				}
			}
			for i, e := range w.evals {
				w.seen[i][b2i(e(k) != 0)] = true
			}
			if w.premise != nil && w.premise(k) != 0 {
				w.premOK = true
			}
		}
		for _, l := range ls {
			if l.from(k) != 0 {
				l.premOK = true
				l.atOnce = l.atOnce && l.to(k) != 0
			}
		}
	}
	// The checker's own search, exact, with every state handed to visit.
	r, err := run(ctx, p, "", Options{MaxStates: maxStates}, visit)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.Status != Holds {
		return nil, nil // too large to tell
	}
	states := r.States
	var found []Vacuous
	for _, l := range ls {
		switch {
		case !l.premOK:
			found = append(found, Vacuous{Property: l.prop.ID, Pos: l.prop.Pos,
				Why: fmt.Sprintf("its premise %s is false in all %d reachable states, so nothing ever has to follow and it holds vacuously",
					l.prop.From, states)})
		case l.atOnce:
			found = append(found, Vacuous{Property: l.prop.ID, Pos: l.prop.Pos,
				Why: fmt.Sprintf("its goal %s holds in every reachable state where its premise %s does, so it holds at once, whatever the fairness",
					l.prop.To, l.prop.From)})
		}
	}
	for _, w := range ws {
		if w.broken {
			continue
		}
		switch {
		case w.premise != nil && !w.premOK:
			found = append(found, Vacuous{Property: w.prop.ID, Pos: w.prop.Pos,
				Why: fmt.Sprintf("its premise %s is false in all %d reachable states, so the implication holds vacuously",
					w.prop.Expr.Args[0], states)})
		case len(w.atoms) > 0 && allConstant(w.seen) && !w.guarded:
			var vals []string
			for i, a := range w.atoms {
				vals = append(vals, fmt.Sprintf("%s is always %v", a, w.seen[i][1]))
			}
			found = append(found, Vacuous{Property: w.prop.ID, Pos: w.prop.Pos,
				Why: fmt.Sprintf("every condition it reads is constant over the %d reachable states (%s), and no transition's writes could make it false even unguarded, so it holds whatever the protocol does",
					states, strings.Join(vals, ", "))})
		}
	}
	return found, nil
}

// leadsWatch follows a leads-to property P ~> Q over the reachable states.
// It holds vacuously when P never holds, and trivially (at once) when Q
// holds wherever P does.
type leadsWatch struct {
	prop     *ir.Property
	from, to evalFn
	premOK   bool // P held somewhere
	atOnce   bool // Q held wherever P did
}

// collectAtoms appends e's conditions: the maximal sub-formulas not built
// with a boolean connective.
func collectAtoms(e *ir.Expr, out *[]*ir.Expr) {
	switch e.Op {
	case ir.OpNot, ir.OpAnd, ir.OpOr, ir.OpImplies:
		for _, a := range e.Args {
			collectAtoms(a, out)
		}
	case ir.OpConst:
	default:
		*out = append(*out, e)
	}
}

func allConstant(seen [][2]bool) bool {
	for _, s := range seen {
		if s[0] && s[1] {
			return false
		}
	}
	return true
}
