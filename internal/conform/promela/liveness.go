package promela

// Leads-to properties in Promela.
//
// A model with leads-to properties gets, inside #if defined(LIVE_<ID>) ||
// ... (so that the safety runs, compiled without any, keep their state
// counts):
//
//	byte act = 0;              the transition taken last, 1-based (0: none yet)
//	#define took(n) act = n    called by each transition's d_step
//	#define en_T (guard)       one per transition: its guard and domain bounds
//	#ifdef LIVE_ID             one per leads-to property
//	never live_ID { ... }      the negation of fair -> [] ((P) -> <> (Q))
//	#endif
//
// where, under weak fairness, fair is the conjunction over transitions T of
// []<> (!en_T || act == T): each transition is infinitely often disabled
// or taken. On a lasso that is the Go checker's condition (disabled in some
// state of the cycle, or labelling a step of it), since the never claim
// reads act in the state each step leads to. Without fairness the formula
// is [] ((P) -> <> (Q)). The claim is written out (writeClaim) rather
// than given to SPIN as an ltl formula: SPIN's translation of a
// conjunction of eight []<> terms already takes minutes. SPIN checks it as
// an acceptance-cycle search:
//
//	spin -o2 -DLIVE_ID -a model.pml
//	gcc -DNOREDUCE pan.c -o pan && ./pan -a
//
// A deadlocked state stutters under SPIN's stutter extension, as it does
// in the Go checker. Transitions are branches of one process, so SPIN's
// own weak fairness (-f, per process) would not express this; the formula
// does.

import (
	"fmt"
	"strings"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// ClaimMacro is the macro that, defined when SPIN generates the verifier
// (spin -D<macro> -a), compiles in the transition record and the never
// claim of the leads-to property, and no other claim (SPIN 6.5.2's pan
// explores a single state when -N selects the first of several claims).
func ClaimMacro(m *ir.Model, property string) (string, error) {
	e := newEmitter(m)
	for i, p := range m.Properties {
		if p.ID == property {
			if p.Kind != ir.LeadsTo {
				return "", fmt.Errorf("model %s: %s is an invariant, checked by an assertion (CheckMacro)", m.Name, property)
			}
			return e.claimOn[i], nil
		}
	}
	return "", fmt.Errorf("model %s has no property %q", m.Name, property)
}

// claimLiveness claims the names the liveness block uses, when m has a
// leads-to property.
func (e *emitter) claimLiveness(claim func(string) string) {
	for _, p := range e.m.Properties {
		e.live = e.live || p.Kind == ir.LeadsTo
	}
	if !e.live {
		return
	}
	e.act = claim("act")
	e.took = claim("took")
	e.enabled = make([]string, len(e.m.Transitions))
	for i := range e.m.Transitions {
		e.enabled[i] = claim(fmt.Sprintf("en_%d", i+1))
	}
	// The never claims' labels, which SPIN refuses when a variable has
	// the name; "accept" must begin the accepting one's.
	e.labels.wait, e.labels.accept = claim("wait"), claim("accept_all")
	for i := range e.m.Transitions {
		e.labels.meet = append(e.labels.meet, claim(fmt.Sprintf("meet_%d", i+1)))
	}
	e.claim = make([]string, len(e.m.Properties))
	e.claimOn = make([]string, len(e.m.Properties))
	for i, p := range e.m.Properties {
		if p.Kind == ir.LeadsTo {
			e.claim[i] = claim("live_" + p.ID)
			e.claimOn[i] = claim("LIVE_" + p.ID)
		}
	}
}

// emitLiveness prints the liveness block.
func (e *emitter) emitLiveness(b *strings.Builder) {
	m := e.m
	typ := "byte"
	if len(m.Transitions) > 255 {
		typ = "short"
	}
	var on []string
	for i, p := range m.Properties {
		if p.Kind == ir.LeadsTo {
			on = append(on, "defined("+e.claimOn[i]+")")
		}
	}
	fmt.Fprintf(b, "\n#if %s\n", strings.Join(on, " || "))
	fmt.Fprintf(b, "%s %s = 0; /* the transition taken last, 1-based */\n", typ, e.act)
	fmt.Fprintf(b, "#define %s(n) %s = n\n", e.took, e.act)
	for i, t := range m.Transitions {
		fmt.Fprintf(b, "#define %s (%s) /* %s */\n", e.enabled[i], e.guard(t), sanitizeComment(t.Label()))
	}
	var fair []string
	for i := range m.Transitions {
		fair = append(fair, fmt.Sprintf("(!%s || %s == %d)", e.enabled[i], e.act, i+1))
	}
	for i, p := range m.Properties {
		if p.Kind != ir.LeadsTo {
			continue
		}
		fmt.Fprintf(b, "/* %s %s: %s, %s fairness */\n", p.Principle, p.Class, sanitizeComment(p.String()), p.Fairness)
		obligations := fair
		if p.Fairness != ir.WeakFairness {
			obligations = nil
		}
		fmt.Fprintf(b, "#ifdef %s\n", e.claimOn[i])
		writeClaim(b, e.claim[i], e.labels, e.expr(p.From), e.expr(p.To), obligations)
		b.WriteString("#endif\n")
	}
	fmt.Fprintf(b, "#else\n#define %s(n) skip\n#endif\n", e.took)
}

// writeClaim prints the never claim of fair ∧ <>(P ∧ [] !Q), where fair
// is []<> f for each obligation f: a Büchi automaton that waits for a
// state where P holds and Q does not, then, while Q stays false, meets the
// obligations one after the other (each at a later state than the one
// before) and accepts when it has met them all. An accepting cycle is a
// behaviour on which Q never holds after P and every obligation holds
// infinitely often. The automaton has one state per obligation, where
// SPIN's translation of the equivalent ltl formula grows too large to
// build with a few dozen transitions.
func writeClaim(b *strings.Builder, name string, l claimLabels, from, to string, obligations []string) {
	notQ := "!(" + to + ")"
	fmt.Fprintf(b, "never %s {\n%s:\n  if\n  :: ((%s) && %s) -> goto ", name, l.wait, from, notQ)
	if len(obligations) == 0 {
		fmt.Fprintf(b, "%s\n  :: true -> goto %s\n  fi;\n", l.accept, l.wait)
		fmt.Fprintf(b, "%[1]s:\n  if\n  :: %[2]s -> goto %[1]s\n  fi\n}\n", l.accept, notQ)
		return
	}
	fmt.Fprintf(b, "%s\n  :: true -> goto %s\n  fi;\n", l.meet[0], l.wait)
	for i, f := range obligations {
		next := l.accept
		if i < len(obligations)-1 {
			next = l.meet[i+1]
		}
		fmt.Fprintf(b, "%[1]s:\n  if\n  :: (%[2]s && %[3]s) -> goto %[4]s\n  :: %[2]s -> goto %[1]s\n  fi;\n", l.meet[i], notQ, f, next)
	}
	fmt.Fprintf(b, "%s:\n  if\n  :: %s -> goto %s\n  fi\n}\n", l.accept, notQ, l.meet[0])
}

// claimLabels are the labels of a never claim: wait for a state where P
// holds and Q does not, meet each obligation in turn, accept.
type claimLabels struct {
	wait, accept string
	meet         []string // [obligation]
}
