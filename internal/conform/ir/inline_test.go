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
