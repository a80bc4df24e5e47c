package tla

import (
	"fmt"
	"strings"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// names are the identifiers a module prints. They start from the model's
// printed names (ir.PrintNames, shared with Promela) and add what only
// TLA+ needs:
//
//   - a module-level name TLA+ would still misread is escaped once more
//     with ir.EscapePrefix, made unique: an instance of a transition with
//     parameters whose id is WF or SF (WF_x, read as the fairness
//     operator), and the operators of the standard module FiniteSets
//     (Cardinality, IsFiniteSet), which a module extending it cannot
//     declare again;
//   - a quantifier's bound name is unique against every name the module
//     declares or extends (SANY refuses a bound name that is already
//     defined: a property named i1 and a quantifier over i1);
//   - the binders of the initial values of arrays (i1, i2, ...) and the
//     names of symmetric domains (symmetry.go) are unique against all of
//     these.
//
// Everything is a pure function of the model, so Emit and Config agree.
type names struct {
	ir.Names                   // Vars (scalars only), Arrays, Transitions, Properties, as TLA+ prints them
	bound    map[string]string // a quantifier's bound name in the model → as printed
	binders  []string          // [dimension]: the binder of arrayInit's function constructors
	sym      *symmetry         // nil without symmetric domains
	used     map[string]bool
}

// definedByPrinter are the names the module defines itself; ir.Ident
// keeps model names off them.
var definedByPrinter = []string{"Init", "Next", "NextNoAdversary", "Spec", "SpecNoAdversary", "TypeOK", "vars",
	"Fairness", "FairnessNoAdversary", "FairSpec", "FairSpecNoAdversary", "ProgressSpec", "ProgressSpecNoAdversary"}

// standardNames are the names the modules the printed module extends
// define (Integers' Int and Nat, FiniteSets' operators): no declaration
// or binder may take them.
var standardNames = []string{"Int", "Nat", "Cardinality", "IsFiniteSet"}

func newNames(m *ir.Model) *names {
	n := &names{Names: m.PrintNames(), bound: map[string]string{}, used: map[string]bool{}}
	for _, s := range append(definedByPrinter, standardNames...) {
		n.used[s] = true
	}
	printed := func(i int) bool { return m.Vars[i].Index == nil } // cells are Promela's
	all := func(int) bool { return true }
	lists := []struct {
		names []string
		keep  func(int) bool
	}{{n.Vars, printed}, {n.Arrays, all}, {n.Transitions, all}, {n.Properties, all}}
	for _, l := range lists {
		for i, s := range l.names {
			if l.keep(i) {
				n.used[s] = true
			}
		}
	}
	for _, l := range lists {
		for i, s := range l.names {
			if l.keep(i) && misread(s) {
				l.names[i] = n.claim(ir.EscapePrefix + s)
			}
		}
	}
	eachExpr(m, func(x *ir.Expr) {
		if (x.Op == ir.OpForall || x.Op == ir.OpExists) && n.bound[x.Name] == "" {
			n.bound[x.Name] = n.claim(ir.Ident(x.Name))
		}
	})
	for d := range maxIndexDims(m) {
		n.binders = append(n.binders, n.claim(fmt.Sprintf("i%d", d+1)))
	}
	n.sym = newSymmetry(m, n.claim)
	return n
}

// misread reports whether TLA+ would read a printed model name as
// something else.
func misread(s string) bool {
	if strings.HasPrefix(s, "WF_") || strings.HasPrefix(s, "SF_") {
		return true
	}
	for _, std := range standardNames {
		if s == std {
			return true
		}
	}
	return false
}

// claim returns want, or want with "_" appended until it is unused, and
// marks it used.
func (n *names) claim(want string) string {
	for n.used[want] {
		want += "_"
	}
	n.used[want] = true
	return want
}
