package ir

import (
	"strings"
	"testing"
)

// recs is a small model with a record and an array of records.
const recs = `ir_version: 1
model: recs
protocol: MCP
domains:
  - {name: Call, type: int, min: 1, max: 2}
variables:
  - {name: calls, type: "c: Call -> {state: enum [idle, held], owner: int [1..2]}", init: {owner: "c"}}
  - {name: gate, type: "{open: bool, count: int [0..3]}", init: {open: "true"}}
  - {name: n, type: int, min: 0, max: 1}
transitions:
  - {id: Hold, kind: Environment, assumption: t, params: {c: Call}, guard: "gate.open", writes: {"calls[c].state": held, "gate.count": "1"}}
properties:
  - {id: P, principle: SL, class: AASM-HARDENING, expr: "forall c in Call: calls[c].state == held => gate.count == 1"}
`

func TestRecordModel(t *testing.T) {
	m, ds := Load([]byte(recs), "r.yaml", LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	var names []string
	for _, v := range m.Vars {
		names = append(names, v.Name)
	}
	// Field-major: every cell of calls.state, then of calls.owner.
	if got := strings.Join(names, " "); got != "calls[1].state calls[2].state calls[1].owner calls[2].owner gate.open gate.count n" {
		t.Errorf("cells %s", got)
	}
	if m.Vars[2].Init != 1 || m.Vars[3].Init != 2 || m.Vars[4].Init != 1 || m.Vars[5].Init != 0 {
		t.Errorf("inits %d %d %d %d", m.Vars[2].Init, m.Vars[3].Init, m.Vars[4].Init, m.Vars[5].Init)
	}
	if len(m.Records) != 2 || len(m.Arrays) != 2 || m.Arrays[1].Name != "calls.owner" || m.Arrays[1].Field != "owner" {
		t.Errorf("%d records, arrays %+v", len(m.Records), m.Arrays)
	}
	if got := m.Properties[0].Expr.String(); got != "(forall c in Call: ((calls[c].state == held) => (gate.count == 1)))" {
		t.Errorf("P prints as %s", got)
	}
	hold := m.Transitions[1]
	if hold.Label() != "Hold(c=2)" || hold.Writes[0].Var != 1 || hold.Writes[1].Var != 5 {
		t.Errorf("%s writes %+v", hold.Label(), hold.Writes)
	}
	n := m.PrintNames()
	if n.Arrays[0] != "calls_state" || n.Vars[1] != "calls_state_2" || n.Vars[5] != "gate_count" {
		t.Errorf("printed names %v %v", n.Arrays, n.Vars)
	}
}

// Misuse of records is reported where it is, with a code.
func TestRecordDiagnostics(t *testing.T) {
	const p = `expr: "forall c in Call: calls[c].state == held => gate.count == 1"`
	const w = `writes: {"calls[c].state": held, "gate.count": "1"}`
	cases := []struct {
		name, from, to, want string
	}{
		{"unknown field", p, `expr: "calls[1].stat == held"`, `r.yaml:13:58: error: record "calls" has no field "stat" (its fields: state, owner) [unknown-field]`},
		{"unknown field of a record", p, `expr: "gate.opened"`, `r.yaml:13:58: error: record "gate" has no field "opened" (its fields: open, count) [unknown-field]`},
		{"record as a scalar", p, `expr: "gate"`, `r.yaml:13:58: error: record "gate" is read one field at a time: gate.open [record]`},
		{"array of records without a field", p, `expr: "calls[1] == held"`, `r.yaml:13:58: error: "calls" is an array of records, read one field at a time: calls[...].state [record]`},
		{"field of a scalar", p, `expr: "n.x == 1"`, `r.yaml:13:58: error: "n" is not a record; only a record has fields (n.x) [record]`},
		{"record array without index", p, `expr: "calls.state == held"`, `r.yaml:13:58: error: "calls" is an array of records, read one cell at a time: calls[...].state [type-mismatch]`},
		{"index on a record", p, `expr: "gate[1].open"`, `r.yaml:13:58: error: record "gate" is not an array: read its field as gate.open [type-mismatch]`},
		{"field under a quantifier", p, `expr: "forall c in Call: calls[c].own == 1"`, `r.yaml:13:76: error: record "calls" has no field "own" (its fields: state, owner) [unknown-field]`},
		{"field of the wrong type", p, `expr: "gate.open == 1"`, `r.yaml:13:68: error: cannot compare bool with int[1..1] [type-mismatch]`},
		{"write to an unknown field", w, `writes: {"calls[c].stat": held}`, `r.yaml:11:99: error: record "calls" has no field "stat" (its fields: state, owner) [unknown-field]`},
		{"write to a whole record", w, `writes: {"gate": "1"}`, `r.yaml:11:98: error: record "gate" is written one field at a time: "gate.open" [record]`},
		{"unknown field in init", `init: {open: "true"}`, `init: {opn: "true"}`, `r.yaml:8:66: error: record "gate" has no field "opn" (its fields: open, count) [unknown-field]`},
		{"init not a mapping", `init: {open: "true"}`, `init: "true"`, `r.yaml:8:65: error: the init of record "gate" is a mapping from field to initial value, {open: ...} [init]`},
		{"init out of domain", `init: {open: "true"}`, `init: {count: "4"}`, `r.yaml:8:74: error: initial value 4 is outside int[0..3] [out-of-domain]`},
		{"enum field without values", `state: enum [idle, held]`, `state: enum idle`, `r.yaml:7:5: error: field state of "calls"'s cells: an enum field is written "enum [v1, v2, ...]", not "enum idle" [invalid-type]`},
		{"two fields of one name", `owner: int [1..2]`, `state: int [1..2]`, `r.yaml:7:5: error: "calls"'s cells has two fields named "state" [duplicate-id]`},
		{"nested record", `{open: bool, count: int [0..3]}`, `{open: {a: bool}}`, `r.yaml:8:5: error: a field of "gate" is a record; records do not nest [invalid-type]`},
		{"unread field of an array of records", p, `expr: "gate.open"`, `r.yaml:7:5: warning: field "owner" of the array of records "calls" is never read by a guard, a write or a property [unused-variable]`},
		{"unread field", p, `expr: "gate.open"`, `r.yaml:8:5: warning: field "gate.count" is never read by a guard, a write or a property [unused-variable]`},
		{"unknown field domain", `owner: int [1..2]`, `owner: Agent`, `r.yaml:7:5: error: unknown domain "Agent" (declare it under domains:) [unknown-domain]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(recs, c.from, c.to, 1)
			if src == recs {
				t.Fatalf("case does not change the model")
			}
			_, ds := Load([]byte(src), "r.yaml", LintOptions{})
			if !strings.Contains(ds.String(), c.want) {
				t.Errorf("want %q in\n%s", c.want, ds)
			}
			if !ds.HasErrors() && !strings.Contains(c.want, "warning") {
				t.Error("no error")
			}
		})
	}
}

// A constant's name followed by a field is not the constant.
func TestRecordFieldOfConstant(t *testing.T) {
	src := strings.Replace(recs, "protocol: MCP", "protocol: MCP\nconstants: [{name: K, value: 1}]", 1)
	src = strings.Replace(src, "gate.count == 1\"", "gate.count == K.x\"", 1)
	_, ds := Load([]byte(src), "r.yaml", LintOptions{})
	if want := `r.yaml:14:116: error: unknown record "K" [unknown-variable]`; !strings.Contains(ds.String(), want) {
		t.Errorf("want %q in\n%s", want, ds)
	}
}
