package ir

import (
	"math/bits"
	"slices"
	"strings"
)

// Bits is the number of bits a value of t occupies in a packed state.
func (t Type) Bits() int { return bits.Len(uint(t.Size() - 1)) }

// StateBits is the width of m's packed state vector.
func (m *Model) StateBits() int {
	n := 0
	for _, v := range m.Vars {
		n += v.Type.Bits()
	}
	return n
}

// Reads calls fn for every variable e may read: the variables it names, and
// every cell of an array it reads at an index that depends on a bound
// variable.
func (m *Model) Reads(e *Expr, fn func(int)) {
	if e == nil {
		return
	}
	switch e.Op {
	case OpVar:
		fn(e.Var)
	case OpIndex:
		if e.Var >= 0 && e.Var < len(m.Arrays) {
			a := &m.Arrays[e.Var]
			for c := a.First; c < a.First+a.Cells(); c++ {
				fn(c)
			}
		}
	}
	for _, a := range e.Args {
		m.Reads(a, fn)
	}
}

// LintOptions configures Lint.
type LintOptions struct {
	// Clause reports whether a clause id exists in the catalog. Nil skips
	// the check of source_refs.
	Clause func(id string) bool
}

// Lint returns every problem of m that Parse does not see: ids used twice,
// transitions and properties that trace to nothing, references to clauses
// the catalog does not have, an adversary action without its capability,
// and variables nobody reads.
func Lint(m *Model, opts LintOptions) Diagnostics {
	d := &diags{file: m.File}
	refs := func(p Pos, owner string, ids []string) {
		for _, id := range ids {
			if opts.Clause != nil && !opts.Clause(id) {
				d.add(p, "unknown-clause", "%s refers to clause %q, which the catalog does not have", owner, id)
			}
		}
	}
	if m.Protocol == "" {
		d.add(Pos{Line: 1, Col: 1}, "missing", "the model needs a protocol")
	}
	if m.IsComposition() {
		if m.Pattern > 5 || len(m.Protocols) < 2 {
			d.add(Pos{Line: 1, Col: 1}, "composition", "a composition names its §6.3 pattern (1..5) and at least two protocols")
		}
	} else if len(m.Protocols) > 0 {
		d.add(Pos{Line: 1, Col: 1}, "composition", "protocols: is only for compositions (pattern: 1..5)")
	}
	if len(m.Transitions) == 0 && m.declared == 0 {
		d.add(Pos{Line: 1, Col: 1}, "missing", "the model has no transitions")
	}
	read := make([]bool, len(m.Vars))
	mark := func(e *Expr) {
		m.Reads(e, func(i int) {
			if i >= 0 && i < len(read) {
				read[i] = true
			}
		})
	}
	scalars := map[string]bool{}
	for _, v := range m.Vars {
		scalars[v.Name] = scalars[v.Name] || v.Index == nil
	}
	ids := map[string]Pos{}
	for _, t := range m.Transitions {
		if prev, dup := ids[t.ID]; dup && t.ID != "" && prev != t.Pos { // instances of one transition share its id
			d.add(t.Pos, "duplicate-id", "transition id %q is also used at %s", t.ID, prev)
		}
		if scalars[t.ID] {
			d.add(t.Pos, "duplicate-id", "transition id %q is also a variable (TLA+ has one name space for both)", t.ID)
		}
		ids[t.ID] = t.Pos
		switch t.Kind {
		case Protocol:
			if len(t.SourceRefs) == 0 {
				d.add(t.Pos, "untraced", "protocol transition %q must cite the clauses that license it (source_refs)", t.ID)
			}
			if t.Modality == "" {
				d.add(t.Pos, "missing", "protocol transition %q needs a modality", t.ID)
			}
		case Environment:
			if t.Assumption == "" && len(t.SourceRefs) == 0 {
				d.add(t.Pos, "untraced", "environment transition %q must state its assumption or cite a clause", t.ID)
			}
		case Adversary:
			if t.Adversary == "" {
				d.add(t.Pos, "untraced", "adversary transition %q must name its capability in \"adversary:\" (one of %v)", t.ID, AdversaryCaps)
			}
		}
		if t.Kind != Adversary && t.Adversary != "" {
			d.add(t.Pos, "kind", "only Adversary transitions have an adversary capability; %q is %s", t.ID, t.Kind)
		}
		refs(t.Pos, "transition "+t.ID, t.SourceRefs)
		mark(t.Guard)
		for _, w := range t.Writes {
			mark(w.Expr)
		}
		if t.Warden != nil {
			mark(t.Warden.Guard)
			for _, w := range t.Warden.Writes {
				mark(w.Expr)
			}
		}
	}
	pids := map[string]Pos{}
	for _, p := range m.Properties {
		if prev, dup := pids[p.ID]; dup && p.ID != "" {
			d.add(p.Pos, "duplicate-id", "property id %q is also used at %s", p.ID, prev)
		}
		pids[p.ID] = p.Pos
		if _, clash := ids[p.ID]; clash {
			d.add(p.Pos, "duplicate-id", "property id %q is also a transition id", p.ID)
		}
		if scalars[p.ID] {
			d.add(p.Pos, "duplicate-id", "property id %q is also a variable (TLA+ has one name space for both)", p.ID)
		}
		if p.Class != "AASM-HARDENING" && p.Class != "APS-COMPLETENESS" && len(p.SourceRefs) == 0 {
			d.add(p.Pos, "untraced", "property %q is %s, so it must cite the clause that mandates or recommends it", p.ID, p.Class)
		}
		if p.Principle == "CS" && !m.IsComposition() {
			d.add(p.Pos, "composition", "CS property %q belongs in a composition model", p.ID)
		}
		refs(p.Pos, "property "+p.ID, p.SourceRefs)
		n := 0
		for _, x := range p.Exprs() {
			mark(x)
			m.Reads(x, func(int) { n++ })
		}
		if n == 0 && len(p.Exprs()) > 0 {
			d.warn(p.Pos, "constant-property", "property %q reads no variable, so it is constant", p.ID)
		}
	}
	arrayRead := make([]bool, len(m.Arrays))
	for i, v := range m.Vars {
		if v.Index != nil {
			arrayRead[v.Array] = arrayRead[v.Array] || read[i]
		} else if !read[i] {
			what := "variable"
			if strings.Contains(v.Name, ".") {
				what = "field"
			}
			d.warn(v.Pos, "unused-variable", "%s %q is never read by a guard, a write or a property", what, v.Name)
		}
	}
	for i, a := range m.Arrays {
		if !arrayRead[i] && a.Record != "" {
			d.warn(a.Pos, "unused-variable", "field %q of the array of records %q is never read by a guard, a write or a property", a.Field, a.Record)
		} else if !arrayRead[i] {
			d.warn(a.Pos, "unused-variable", "array %q is never read by a guard, a write or a property", a.Name)
		}
	}
	slices.SortStableFunc(d.list, func(a, b Diagnostic) int {
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Col - b.Pos.Col
	})
	return d.list
}

// Load parses and lints a model: the one call most callers want.
func Load(data []byte, file string, opts LintOptions) (*Model, Diagnostics) {
	return LoadWith(data, file, ParseOptions{}, opts)
}

// LoadWith is Load with parse options (constant overrides).
func LoadWith(data []byte, file string, popts ParseOptions, opts LintOptions) (*Model, Diagnostics) {
	m, ds := ParseWith(data, file, popts)
	if m == nil {
		return nil, ds
	}
	return m, append(ds, Lint(m, opts)...)
}
