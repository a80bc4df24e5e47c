package ir_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
)

// An array's cell type may be written in place, as a record field's is:
// "Call -> enum [idle, held, done]" and "Call -> int [0..MAXN]". The model
// loads, its values are the enum's, and the checker explores it: 3 cells
// of 3 states each for two calls, times the counter's 3 values.
func TestInlineCellTypes(t *testing.T) {
	const src = `ir_version: 1
model: inline
protocol: MCP
constants:
  - {name: MAXN, value: 2}
domains:
  - {name: Call, type: int, min: 1, max: 2}
variables:
  - {name: state, type: "Call -> enum [idle, held, done]", init: idle}
  - {name: n, type: "Call -> int [0..MAXN]", init: "0"}
transitions:
  - {id: Hold, kind: Environment, assumption: t, params: {c: Call}, guard: "state[c] == idle", writes: {"state[c]": held}}
  - {id: Done, kind: Environment, assumption: t, params: {c: Call}, guard: "state[c] == held && n[c] < MAXN", writes: {"state[c]": done, "n[c]": "n[c] + 1"}}
properties:
  - {id: NeverDoneIdle, principle: P5, class: AASM-HARDENING, expr: "forall c in Call: state[c] == done => n[c] == 1"}
  - {id: NobodyDone, principle: P5, class: AASM-HARDENING, expr: "forall c in Call: state[c] != done"}
`
	m, ds := ir.Load([]byte(src), "inline.yaml", ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatalf("%s", ds)
	}
	prog, err := check.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]check.Status{"NeverDoneIdle": check.Holds, "NobodyDone": check.Violated} {
		r, err := check.Verify(context.Background(), prog, id, check.Options{MaxStates: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != want {
			t.Errorf("%s: %s, want %s", id, r.Status, want)
		}
		if id == "NeverDoneIdle" && r.States != 9 {
			t.Errorf("%s: %d states, want 9 (idle, held, done per call)", id, r.States)
		}
	}

	// Malformed in place: one precise error each, at the variable.
	for _, tc := range []struct{ typ, want string }{
		{"Call -> enum idle", `"bad"'s cells: an enum cell is written "enum [v1, v2, ...]", not "enum idle"`},
		{"Call -> int [0..NOPE]", `"bad"'s cells: an int cell is written "int [lo..hi]" with integers or constants, not "int [0..NOPE]"`},
	} {
		bad := strings.Replace(src, "  - {name: n, type: \"Call -> int [0..MAXN]\", init: \"0\"}\n",
			"  - {name: n, type: \"Call -> int [0..MAXN]\", init: \"0\"}\n  - {name: bad, type: \""+tc.typ+"\"}\n", 1)
		_, ds := ir.Load([]byte(bad), "inline.yaml", ir.LintOptions{})
		if got := ds.String(); !strings.Contains(got, "inline.yaml:11:5: error: "+tc.want+" [invalid-type]") {
			t.Errorf("%s: want %q in\n%s", tc.typ, tc.want, got)
		}
	}
}

// An index of constants alone is folded when the model is read: a write
// key may use one (f[AGENTS - 1], m[-1] over a domain with negative
// elements), and one outside its domain is an error at load, at its
// position, not a crash or a refusal later.
func TestConstantIndexFolded(t *testing.T) {
	const src = `ir_version: 1
model: fold
protocol: MCP
constants:
  - {name: AGENTS, value: 2}
domains:
  - {name: Agent, type: int, min: 1, max: AGENTS}
  - {name: Off, type: int, min: -1, max: 1}
variables:
  - {name: f, type: "Agent -> bool", init: "false"}
  - {name: m, type: "Off -> bool", init: "false"}
transitions:
  - {id: Set, kind: Environment, assumption: t, writes: {"f[AGENTS - 1]": "true", "m[-1]": "true"}}
properties:
  - {id: P, principle: P3, class: AASM-HARDENING, expr: "!f[AGENTS - 1] || m[0 - 1]"}
`
	m, ds := ir.Load([]byte(src), "fold.yaml", ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatalf("%s", ds)
	}
	prog, err := check.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	r, err := check.Verify(context.Background(), prog, "P", check.Options{MaxStates: 100})
	if err != nil || r.Status != check.Holds || r.States != 2 {
		t.Errorf("P: %v, %s in %d states; want it to hold in 2 (Set writes f[1] and m[-1] together)", err, r.Status, r.States)
	}
	bad := strings.Replace(src, `"!f[AGENTS - 1] || m[0 - 1]"`, `"!f[AGENTS + 1]"`, 1)
	_, ds = ir.Load([]byte(bad), "fold.yaml", ir.LintOptions{})
	if got := ds.String(); !strings.Contains(got, "fold.yaml:15:") || !strings.Contains(got, "index 3 is outside") || !strings.Contains(got, "[out-of-domain]") {
		t.Errorf("f[AGENTS + 1]: want an out-of-domain error at load, got\n%s", got)
	}
}

// A variable named like a value of an enum the model declares is refused:
// "e == len" would otherwise read the variable len where the value was
// meant, and nothing would say so.
func TestVariableNamedLikeAnEnumValue(t *testing.T) {
	const src = `ir_version: 1
model: clash
protocol: MCP
domains:
  - {name: K, type: enum, values: [len, x]}
variables:
  - {name: e, type: K, init: x}
  - {name: len, type: K, init: x}
transitions:
  - {id: T, kind: Environment, assumption: t, writes: {e: len}}
properties:
  - {id: P, principle: P3, class: AASM-HARDENING, expr: "e != len"}
`
	_, ds := ir.Load([]byte(src), "clash.yaml", ir.LintOptions{})
	want := `clash.yaml:8:5: error: variable "len" has the name of a value of domain K; rename one of them [duplicate-id]`
	if got := ds.String(); !strings.Contains(got, want) {
		t.Errorf("want %q in\n%s", want, got)
	}
	ok := strings.Replace(src, "{name: len, type: K, init: x}", "{name: n, type: K, init: x}", 1)
	if _, ds := ir.Load([]byte(ok), "clash.yaml", ir.LintOptions{}); ds.HasErrors() {
		t.Errorf("without the clash: %s", ds)
	}
}

// A domain may not take a built-in type's name: "type: bool" would still
// mean the built-in bool.
func TestDomainNamedLikeABuiltInType(t *testing.T) {
	for _, name := range []string{"bool", "int", "enum", "set"} {
		src := `ir_version: 1
model: d
protocol: MCP
domains:
  - {name: ` + name + `, type: enum, values: [a, b]}
variables:
  - {name: v, type: bool}
transitions:
  - {id: T, kind: Environment, assumption: t, writes: {v: "!v"}}
properties:
  - {id: P, principle: P3, class: AASM-HARDENING, expr: "v || !v"}
`
		_, ds := ir.Load([]byte(src), "d.yaml", ir.LintOptions{})
		want := `d.yaml:5:5: error: domain name "` + name + `" is a built-in type's; choose another [name]`
		if got := ds.String(); !strings.Contains(got, want) {
			t.Errorf("want %q in\n%s", want, got)
		}
	}
}
