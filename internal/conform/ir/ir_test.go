package ir

import (
	"encoding/json"
	"strings"
	"testing"
)

const good = `ir_version: 1
model: toy
protocol: MCP
variables:
  - {name: phase, type: enum, values: [off, on], init: off}
  - {name: n, type: int, min: 0, max: 3}
  - {name: flag, type: bool}
transitions:
  - id: T_on
    kind: Protocol
    guard: "phase == off && !flag"
    writes: {phase: on, n: n + 1}
    modality: MUST
    source_refs: [X-1]
  - {id: A_flag, kind: Adversary, adversary: ADV-1, writes: {flag: true}}
properties:
  - {id: P_n, principle: P6, class: AASM-HARDENING, expr: "n <= 1 => phase == on || !flag"}
`

func TestParseGood(t *testing.T) {
	m, ds := Load([]byte(good), "toy.yaml", LintOptions{Clause: func(id string) bool { return id == "X-1" }})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	if got := m.Properties[0].Expr.String(); got != "((n <= 1) => ((phase == on) || !flag))" {
		t.Errorf("precedence: %s", got)
	}
	if m.StateBits() != 1+2+1 {
		t.Errorf("state bits %d", m.StateBits())
	}
	g := m.Guarded()
	if !g.IsGuarded() || g.Name != "toy+warden" || m.IsGuarded() {
		t.Error("Guarded must return a new variant and leave the model alone")
	}
}

// Each case changes one line of a good model and expects one diagnostic at
// a position.
func TestDiagnostics(t *testing.T) {
	cases := []struct {
		name, from, to, want string
	}{
		{"unknown variable", `guard: "phase == off && !flag"`, `guard: "phase == off && !flg"`, `toy.yaml:11:30: error: unknown variable "flg"`},
		{"enum value", `guard: "phase == off && !flag"`, `guard: "phase == of && !flag"`, `toy.yaml:11:22: error: "of" is neither a variable nor a value of enum[off on]`},
		{"type mismatch", `writes: {phase: on, n: n + 1}`, `writes: {phase: on, n: flag}`, `error: expected int[0..3], not bool`},
		{"int out of domain", `writes: {phase: on, n: n + 1}`, `writes: {phase: on, n: 7}`, `error: constant 7 is outside the domain of n`},
		{"compare out of domain", `expr: "n <= 1 =>`, `expr: "n == 9 =>`, `toy.yaml:17:65: error: constant 9 is outside the domain of n`},
		{"duplicate key", `    kind: Protocol`, "    kind: Protocol\n    kind: Environment", `toy.yaml:11:5: error: duplicate key "kind"`},
		{"anchor", `- {name: flag, type: bool}`, `- &f {name: flag, type: bool}`, `anchor "&f" is not allowed`},
		{"unknown key", `    modality: MUST`, "    modality: MUST\n    modalty: MUST", `unknown key "modalty"`},
		{"missing clause", `source_refs: [X-1]`, `source_refs: [X-2]`, `refers to clause "X-2", which the catalog does not have`},
		{"adversary without capability", `adversary: ADV-1, `, ``, `adversary transition "A_flag" must name its capability`},
		{"syntax", `guard: "phase == off && !flag"`, `guard: "phase == && flag"`, `toy.yaml:11:22: error: unexpected "&&"`},
		{"bad kind", `kind: Adversary`, `kind: Attacker`, `kind "Attacker" is not one of`},
		{"negative init out of domain", `{name: n, type: int, min: 0, max: 3}`, `{name: n, type: int, min: 0, max: 3, init: -1}`,
			`toy.yaml:6:48: error: initial value -1 is outside int[0..3]`},
		{"transition named like a variable", `id: A_flag,`, `id: flag,`, `transition id "flag" is also a variable`},
		{"property named like a variable", `id: P_n,`, `id: n,`, `property id "n" is also a variable`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(good, c.from, c.to, 1)
			if src == good {
				t.Fatalf("case does not change the model")
			}
			_, ds := Load([]byte(src), "toy.yaml", LintOptions{Clause: func(id string) bool { return id == "X-1" }})
			if !strings.Contains(ds.String(), c.want) {
				t.Errorf("want %q in\n%s", c.want, ds)
			}
			if !ds.HasErrors() {
				t.Error("no error")
			}
		})
	}
}

func TestFormatCaret(t *testing.T) {
	src := strings.Replace(good, "!flag\"", "!flg\"", 1)
	_, ds := Parse([]byte(src), "toy.yaml")
	out := ds.Format([]byte(src))
	// The caret is under the f of flg: column 30 (the text starts at 13).
	want := "    guard: \"phase == off && !flg\"\n" + "    " + strings.Repeat(" ", 29) + "^\n"
	if !strings.Contains(out, want) {
		t.Errorf("got\n%s", out)
	}
}

func TestGuardedWrites(t *testing.T) {
	src := strings.Replace(good, "    source_refs: [X-1]\n", "    source_refs: [X-1]\n    warden: {guard: \"n < 1\", writes: {n: 0, flag: false}}\n", 1)
	m, ds := Parse([]byte(src), "toy.yaml")
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	g := m.Guarded()
	tr := g.Transitions[0]
	if tr.Guard.String() != "(((phase == off) && !flag) && (n < 1))" {
		t.Errorf("guard %s", tr.Guard)
	}
	var ws []string
	for _, w := range tr.Writes {
		ws = append(ws, g.Vars[w.Var].Name+":="+w.Expr.String())
	}
	if strings.Join(ws, " ") != "phase:=on n:=0 flag:=false" {
		t.Errorf("writes %v", ws)
	}
	if len(m.Transitions[0].Writes) != 2 {
		t.Error("Guarded changed the original model")
	}
}

// The schema and the parser agree on the keys a model may use.
func TestSchemaMatchesParser(t *testing.T) {
	var s struct {
		Properties map[string]any `json:"properties"`
		Defs       map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(Schema, &s); err != nil {
		t.Fatal(err)
	}
	check := func(what string, keys map[string]any, src string) {
		for k := range keys {
			bad := strings.Replace(good, "model: toy", "model: toy\n"+k+": 1", 1)
			if what != "model" {
				bad = strings.Replace(good, src, src+", "+k+": 1", 1)
			}
			_, ds := Parse([]byte(bad), "t.yaml")
			if strings.Contains(ds.String(), "unknown key") {
				t.Errorf("%s: the schema allows %q, the parser does not", what, k)
			}
		}
	}
	check("model", s.Properties, "")
	check("variable", s.Defs["variable"].Properties, "{name: flag, type: bool")
	check("property", s.Defs["property"].Properties, "{id: P_n, principle: P6")
	check("transition", s.Defs["transition"].Properties, "{id: A_flag, kind: Adversary")
}

// A negative initial value is a constant, accepted where the domain holds it.
func TestNegativeInit(t *testing.T) {
	src := strings.Replace(good, "{name: n, type: int, min: 0, max: 3}", "{name: n, type: int, min: -3, max: 3, init: -2}", 1)
	m, ds := Parse([]byte(src), "toy.yaml")
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	if got := m.Vars[m.VarIndex("n")].Init; got != -2 {
		t.Errorf("init = %d, want -2", got)
	}
}

// Ident leaves ordinary names alone, escapes every reserved word and
// prefix of TLA+, TLC, Promela and C, and never maps two names to one.
func TestIdentEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"phase": "phase", "P1_identity": "P1_identity", "WF_wire": "w_WF_wire", "SF_x": "w_SF_x",
		"Next": "w_Next", "Init": "w_Init", "len": "w_len", "skip": "w_skip", "CASE": "w_CASE",
		"INVARIANT": "w_INVARIANT", "now": "w_now", "_x": "w__x", "w_len": "w_w_len", "int": "w_int",
		"np_x": "w_np_x",
	} {
		if got := Ident(in); got != want {
			t.Errorf("Ident(%q) = %q, want %q", in, got, want)
		}
	}
	seen := map[string]string{}
	names := []string{"len", "w_len", "w_w_len", "WF_x", "w_WF_x", "x", "w_x", "_x", "w__x", "Next", "w_Next"}
	for w := range reservedIdent {
		names = append(names, w, EscapePrefix+w)
	}
	for _, n := range names {
		got := Ident(n)
		if prev, dup := seen[got]; dup && prev != n {
			t.Errorf("Ident(%q) = Ident(%q) = %q", n, prev, got)
		}
		seen[got] = n
		if reservedIdent[got] || strings.HasPrefix(got, "WF_") || strings.HasPrefix(got, "_") {
			t.Errorf("Ident(%q) = %q is still reserved", n, got)
		}
	}
}

const withConstants = `ir_version: 1
model: agents
protocol: MCP
constants:
  - {name: AGENTS, value: 2, doc: agents in the system}
  - {name: LOW, value: -1}
variables:
  - {name: busy, type: int, min: LOW, max: AGENTS, init: LOW}
transitions:
  - {id: T_work, kind: Environment, assumption: an agent starts, guard: "busy < AGENTS", writes: {busy: busy + 1}}
properties:
  - {id: P_cap, principle: P6, class: AASM-HARDENING, expr: "busy <= AGENTS"}
`

// A constant bounds a variable and appears in expressions; -D overrides
// its value, and a -D for a constant the model lacks is an error.
func TestConstants(t *testing.T) {
	m, ds := Load([]byte(withConstants), "agents.yaml", LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	v := m.Vars[0]
	if v.Type.Min != -1 || v.Type.Max != 2 || v.Init != -1 {
		t.Errorf("busy: %v init %d, want int[-1..2] init -1", v.Type, v.Init)
	}
	if got := m.Transitions[0].Guard.String(); got != "(busy < 2)" {
		t.Errorf("guard %s", got)
	}
	m, ds = LoadWith([]byte(withConstants), "agents.yaml", ParseOptions{Defines: map[string]int{"AGENTS": 3}}, LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	if m.Vars[0].Type.Max != 3 || m.Constants[0].Value != 3 || m.Properties[0].Expr.String() != "(busy <= 3)" {
		t.Errorf("with -D AGENTS=3: %v, %v, %s", m.Vars[0].Type, m.Constants, m.Properties[0].Expr)
	}
	_, ds = LoadWith([]byte(withConstants), "agents.yaml", ParseOptions{Defines: map[string]int{"AGENT": 3}}, LintOptions{})
	if !strings.Contains(ds.String(), `agents.yaml:1:1: error: -D AGENT: the model declares no constant "AGENT"`) {
		t.Errorf("unknown -D: %s", ds)
	}
	bad := strings.Replace(withConstants, "{name: busy,", "{name: AGENTS,", 1)
	if _, ds := Parse([]byte(bad), "agents.yaml"); !strings.Contains(ds.String(), `variable "AGENTS" has the name of a constant`) {
		t.Errorf("variable named like a constant: %s", ds)
	}
}
