package tla

// Symmetric domains in TLA+ and TLC.
//
// A domain declared `symmetric: true` is printed so that TLC can reduce by
// it, as warden conform check does: its elements are model values, not
// integers or strings, because TLC permutes only model values.
//
//	CONSTANTS Agent_1, Agent_2, Agent_3        the elements, as constants
//	Agent == {Agent_1, Agent_2, Agent_3}       the domain, as a set
//	Symmetry == {p \in [Agent -> Agent] : ...} every permutation of it
//
// Each TLC configuration assigns every such constant itself
// (`Agent_1 = Agent_1`), which makes it a model value. The configuration
// of an invariant names the permutations with `SYMMETRY Symmetry`; that of
// a leads-to property does not, because TLC's symmetry reduction is not
// sound for liveness: TLC's documentation warns that it may then miss a
// violation. Symmetry is Permutations of the TLC module written out, so
// that the module extends no module whose names (Print, Len, Head...)
// could clash with a model's. With several symmetric domains it is their
// product, every combination of one permutation per domain, the group the
// Go checker reduces by.
//
// The typecheck (package ir, code symmetry) admits no expression that
// names, orders or computes with an element, so the only places an
// element is printed are the ones a transition parameter or a named array
// index puts there (pc[Agent_1] in the instance Try_1) and initial values.

import (
	"fmt"
	"strings"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// symmetry is how a model's symmetric domains print. Its names are unique
// against every name the module defines or binds.
type symmetry struct {
	domains []symDomain
	op      string   // the set of permutations the configurations name
	p, x, y string   // binders of the permutation sets
	parts   []string // binders of the product, one per domain (several domains)
}

type symDomain struct {
	name  string   // the domain's name in the model
	set   string   // the printed set of its elements
	elems []string // the model value of each element, in ir.Type.Elems order
	perms string   // the operator of its permutations (several domains)
	typ   ir.Type
}

// newSymmetry names m's symmetric domains, each name claimed unique
// against every name the module declares or binds (names.go); nil when it
// has none.
func newSymmetry(m *ir.Model, unique func(string) string) *symmetry {
	doms := m.SymmetricDomains()
	if len(doms) == 0 {
		return nil
	}
	s := &symmetry{}
	for _, d := range doms {
		sd := symDomain{name: d.Name, set: unique(ir.Ident(d.Name)), typ: d.Type}
		for _, v := range d.Type.Elems() {
			sd.elems = append(sd.elems, unique(ir.Ident(d.Name+"_"+identPart(d.Type.Format(v)))))
		}
		s.domains = append(s.domains, sd)
	}
	if len(s.domains) > 1 {
		for i := range s.domains {
			s.domains[i].perms = unique("Perms_" + s.domains[i].set)
		}
	}
	s.op = unique("Symmetry")
	s.p, s.x, s.y = unique("p"), unique("x"), unique("y")
	if len(s.domains) > 1 {
		for i := range s.domains {
			s.parts = append(s.parts, unique(fmt.Sprintf("p%d", i+1)))
		}
	}
	return s
}

// identPart makes an element's printed form ("read", "1", "-1") part of an
// identifier.
func identPart(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		case r == '-':
			b.WriteByte('m')
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func maxIndexDims(m *ir.Model) int {
	n := 0
	for _, a := range m.Arrays {
		n = max(n, len(a.Index))
	}
	return n
}

// domain returns the symmetric domain t's values belong to, or nil.
func (s *symmetry) domain(t ir.Type) *symDomain {
	if s == nil || t.Sym == "" || t.Kind == ir.Set {
		return nil
	}
	for i := range s.domains {
		if s.domains[i].name == t.Sym {
			return &s.domains[i]
		}
	}
	return nil
}

// value is the model value of element v of d.
func (d *symDomain) value(v int) string {
	i := v
	if d.typ.Kind == ir.Int {
		i = v - d.typ.Min
	}
	if i < 0 || i >= len(d.elems) {
		return fmt.Sprint(v) // not an element: cannot happen in a typechecked model
	}
	return d.elems[i]
}

// writeModule prints the declarations and definitions the module needs
// before its variables: the model values, one set per domain, and the
// permutations.
func (s *symmetry) writeModule(b *strings.Builder) {
	var all, sets []string
	for _, d := range s.domains {
		all = append(all, d.elems...)
		sets = append(sets, d.set)
	}
	fmt.Fprintf(b, "\\* Symmetric domains (symmetric: true): %s. Their elements are model values,\n", strings.Join(sets, ", "))
	b.WriteString("\\* which every TLC configuration assigns (" + s.domains[0].elems[0] + " = " + s.domains[0].elems[0] + "), so that TLC may rename them.\n")
	fmt.Fprintf(b, "CONSTANTS %s\n\n", strings.Join(all, ", "))
	for _, d := range s.domains {
		fmt.Fprintf(b, "%s == {%s}\n\n", d.set, strings.Join(d.elems, ", "))
	}
	perms := func(set string) string {
		return fmt.Sprintf("{%[1]s \\in [%[4]s -> %[4]s] : \\A %[3]s \\in %[4]s : \\E %[2]s \\in %[4]s : %[1]s[%[2]s] = %[3]s}", s.p, s.x, s.y, set)
	}
	b.WriteString("\\* Every renaming of the symmetric domains' elements (TLC's Permutations, written\n")
	b.WriteString("\\* out). The invariants' configurations name it with SYMMETRY, so that TLC stores\n")
	b.WriteString("\\* one state per orbit, as warden conform check does. TLC must not use symmetry\n")
	b.WriteString("\\* with a leads-to (~>) property: it may then miss a violation, so the leads-to\n")
	b.WriteString("\\* properties' configurations leave it out and TLC checks them on every state.\n")
	if len(s.domains) == 1 {
		fmt.Fprintf(b, "%s == %s\n\n", s.op, perms(s.domains[0].set))
		return
	}
	for _, d := range s.domains {
		fmt.Fprintf(b, "%s == %s\n\n", d.perms, perms(d.set))
	}
	// The product: one permutation per domain, applied to its own elements.
	body := fmt.Sprintf("%s[%s]", s.parts[len(s.parts)-1], s.x)
	for i := len(s.domains) - 2; i >= 0; i-- {
		body = fmt.Sprintf("IF %s \\in %s THEN %s[%s] ELSE %s", s.x, s.domains[i].set, s.parts[i], s.x, body)
	}
	var gens []string
	for i, d := range s.domains {
		gens = append(gens, fmt.Sprintf("%s \\in %s", s.parts[i], d.perms))
	}
	fmt.Fprintf(b, "%s ==\n  {[%s \\in %s |-> %s] :\n     %s}\n\n", s.op, s.x, strings.Join(sets, " \\cup "), body, strings.Join(gens, ", "))
}

// writeConfig prints the configuration lines for the symmetric domains:
// every model value, and SYMMETRY unless the property is leads-to.
func (s *symmetry) writeConfig(b *strings.Builder, leadsTo bool) {
	b.WriteString("\\* The elements of the symmetric domains are model values.\nCONSTANTS\n")
	for _, d := range s.domains {
		for _, v := range d.elems {
			fmt.Fprintf(b, "  %s = %s\n", v, v)
		}
	}
	if leadsTo {
		fmt.Fprintf(b, "\\* No SYMMETRY %s: TLC must not use symmetry with a leads-to (liveness) property,\n", s.op)
		b.WriteString("\\* it may then miss a violation; this property is checked on every state.\n")
		return
	}
	fmt.Fprintf(b, "\\* TLC stores one state per orbit of the renamings of the symmetric domains.\nSYMMETRY %s\n", s.op)
}
