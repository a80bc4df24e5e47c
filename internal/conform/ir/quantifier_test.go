package ir

import (
	"strings"
	"testing"
)

// deleg is the paper's P3 in the model syntax: domains, a set-valued
// array, a transition with parameters, and a quantified invariant.
const deleg = `ir_version: 1
model: deleg
protocol: A2A
constants:
  - {name: AGENTS, value: 3}
domains:
  - {name: Agent, type: int, min: 1, max: AGENTS}
  - {name: Cap, type: enum, values: [read, exec]}
variables:
  - {name: caps, type: "ag: Agent -> set Cap", init: "if ag == 1 then {read, exec} else {read}"}
  - {name: deleg, type: "Agent -> Agent -> set Cap", init: "{}"}
  - {name: n, type: int, min: 1, max: 3}
transitions:
  - {id: Give, kind: Environment, assumption: t, params: {a: Agent, b: Agent, c: Cap}, guard: "a != b", writes: {"deleg[a][b]": "deleg[a][b] union {c}"}}
properties:
  - {id: P3, principle: P3, class: AASM-HARDENING, expr: "forall ag1 in Agent, ag2 in Agent: ag1 != ag2 => deleg[ag1][ag2] subseteq caps[ag1]"}
  - {id: Used, principle: P3, class: AASM-HARDENING, expr: "n >= 1"}
`

func TestQuantifiedModel(t *testing.T) {
	m, ds := Load([]byte(deleg), "d.yaml", LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	// 3 caps cells + 9 deleg cells + n; 2 bits a cell.
	if len(m.Vars) != 13 || len(m.Arrays) != 2 || m.StateBits() != 12*2+2 {
		t.Errorf("%d vars, %d arrays, %d bits", len(m.Vars), len(m.Arrays), m.StateBits())
	}
	if got := []string{m.Vars[0].Name, m.Vars[3].Name, m.Vars[11].Name}; strings.Join(got, " ") != "caps[1] deleg[1][1] deleg[3][3]" {
		t.Errorf("cell names %v", got)
	}
	// caps[1] = {read, exec} = 0b11, the others {read} = 0b01.
	if m.Vars[0].Init != 3 || m.Vars[1].Init != 1 || m.Vars[2].Init != 1 {
		t.Errorf("caps init %d %d %d", m.Vars[0].Init, m.Vars[1].Init, m.Vars[2].Init)
	}
	if len(m.Transitions) != 3*3*2 {
		t.Fatalf("%d instances of Give, want 18", len(m.Transitions))
	}
	last := m.Transitions[17]
	if last.ID != "Give" || last.Label() != "Give(a=3, b=3, c=exec)" || last.Writes[0].Var != 12-1 {
		t.Errorf("last instance %s writes var %d", last.Label(), last.Writes[0].Var)
	}
	p3 := m.Properties[0].Expr
	if p3.Op != OpForall || p3.Args[0].Op != OpForall || p3.Dom.Name != "Agent" {
		t.Errorf("P3 is %s", p3)
	}
	if got := p3.String(); got != "(forall ag1 in Agent: (forall ag2 in Agent: ((ag1 != ag2) => (deleg[ag1][ag2] subseteq caps[ag1]))))" {
		t.Errorf("P3 prints as %s", got)
	}
	// The mathematical spelling is the same expression.
	uni := strings.Replace(deleg, "forall ag1 in Agent, ag2 in Agent: ag1 != ag2 => deleg[ag1][ag2] subseteq caps[ag1]",
		"∀ ag1 ∈ Agent, ag2 ∈ Agent: ag1 ≠ ag2 ⇒ deleg[ag1][ag2] ⊆ caps[ag1]", 1)
	mu, ds := Load([]byte(uni), "d.yaml", LintOptions{})
	if ds.HasErrors() || mu.Properties[0].Expr.String() != p3.String() {
		t.Errorf("unicode spelling: %s\n%s", mu.Properties[0].Expr, ds)
	}
	// -D AGENTS=2 shrinks every domain that uses it.
	m2, ds := LoadWith([]byte(deleg), "d.yaml", ParseOptions{Defines: map[string]int{"AGENTS": 2}}, LintOptions{})
	if ds.HasErrors() || len(m2.Vars) != 2+4+1 || len(m2.Transitions) != 8 {
		t.Errorf("AGENTS=2: %d vars, %d transitions\n%s", len(m2.Vars), len(m2.Transitions), ds)
	}
}

// Misuse of the new constructs is reported where it is, with a code.
func TestQuantifierDiagnostics(t *testing.T) {
	const p3 = `expr: "forall ag1 in Agent, ag2 in Agent: ag1 != ag2 => deleg[ag1][ag2] subseteq caps[ag1]"`
	cases := []struct {
		name, from, to, want string
	}{
		{"unknown domain", p3, `expr: "forall x in Agents: n == 1"`, `d.yaml:16:59: error: unknown domain "Agents" (declare it under domains:) [unknown-domain]`},
		{"bound hides variable", p3, `expr: "exists n in Agent: n == 1"`, `d.yaml:16:59: error: bound variable "n" hides a variable, an array or another bound variable [name]`},
		{"bound named like a constant", p3, `expr: "exists AGENTS in Agent: AGENTS == 1"`, `d.yaml:16:59: error: bound variable "AGENTS" has the name of a constant [name]`},
		{"index reads state", p3, `expr: "deleg[n][1] == {}"`, `d.yaml:16:65: error: an index of deleg reads a state variable; indices use constants and bound variables only [index]`},
		{"index count", p3, `expr: "deleg[1] == {}"`, `d.yaml:16:59: error: array "deleg" has 2 indices, not 1 [type-mismatch]`},
		{"index out of domain", p3, `expr: "deleg[1][4] == {}"`, `d.yaml:16:68: error: index 4 is outside int[1..3] [out-of-domain]`},
		{"array without index", p3, `expr: "deleg == {}"`, `d.yaml:16:59: error: array "deleg" is read one cell at a time`},
		{"in needs a set", p3, `expr: "read in n"`, `d.yaml:16:67: error: right side of in must be a set, not int[1..3] [type-mismatch]`},
		{"element of the wrong type", p3, `expr: "exists a in Agent: a in caps[1]"`, `error: int[1..3] is not an element type of set of enum[read exec]`},
		{"set element not in domain", p3, `expr: "caps[1] == {read, write}"`, `d.yaml:16:77: error: "write" is neither a variable nor a value of enum[read exec]`},
		{"body not bool", p3, `expr: "forall a in Agent: a"`, `d.yaml:16:78: error: body of forall must be bool, not int[1..3] [type-mismatch]`},
		{"missing colon", p3, `expr: "forall a in Agent a == 1"`, `d.yaml:16:77: error: expected ":" [syntax]`},
		{"unknown param domain", `params: {a: Agent, b: Agent, c: Cap}`, `params: {a: Agent, b: Agent, c: Caps}`, `d.yaml:14:82: error: unknown domain "Caps"`},
		{"param named like a variable", `params: {a: Agent, b: Agent, c: Cap}`, `params: {n: Agent, b: Agent, c: Cap}`, `d.yaml:14:59: error: parameter "n" has the name of a variable`},
		{"write to a cell with a state index", `"deleg[a][b]": "deleg[a][b] union {c}"`, `"deleg[n][b]": "deleg[a][b] union {c}"`, `[index]`},
		{"unknown element domain", `type: "ag: Agent -> set Cap"`, `type: "ag: Agent -> set Caps"`, `d.yaml:10:5: error: unknown domain "Caps"`},
		{"set too large", `{name: Cap, type: enum, values: [read, exec]}`, `{name: Cap, type: int, min: 0, max: 40}`,
			`d.yaml:10:5: error: set "caps"'s cells ranges over 41 elements; at most 30 [domain]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(deleg, c.from, c.to, 1)
			if src == deleg {
				t.Fatalf("case does not change the model")
			}
			_, ds := Load([]byte(src), "d.yaml", LintOptions{})
			if !strings.Contains(ds.String(), c.want) {
				t.Errorf("want %q in\n%s", c.want, ds)
			}
			if !ds.HasErrors() {
				t.Error("no error")
			}
		})
	}
}
