package promela

import (
	"context"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
)

// deadlock: x is set once and nothing runs after, so "x ~> !x" fails on a
// state that repeats forever (a stutter). Until then Flip may toggle y
// forever: "!x ~> x" holds under weak fairness (Set stays enabled, so it is
// taken) and fails without it.
const deadlock = `ir_version: 1
model: deadlock
protocol: MCP
variables:
  - {name: x, type: bool}
  - {name: y, type: bool}
transitions:
  - {id: Set, kind: Environment, assumption: test, guard: "!x", writes: {x: true}}
  - {id: Flip, kind: Environment, assumption: test, guard: "!x", writes: {y: "!y"}}
properties:
  - {id: Stays, kind: leads-to, principle: SL, class: AASM-HARDENING, from: x, to: "!x"}
  - {id: SetFair, kind: leads-to, principle: SL, class: AASM-HARDENING, from: "!x", to: x}
  - {id: SetUnfair, kind: leads-to, fairness: none, principle: SL, class: AASM-HARDENING, from: "!x", to: x}
`

// TestSpinLeadsTo checks leads-to properties with the Go checker and with
// SPIN's acceptance-cycle search over the emitted never claims, on models
// where they hold and where they fail (a lasso, a stutter at a deadlock,
// a cycle that postpones a decision forever, and a cycle that is unfair
// but admitted without fairness), and requires the same verdicts.
func TestSpinLeadsTo(t *testing.T) {
	if raceEnabled {
		t.Skip("SPIN's pan programs are C: the race detector adds nothing; the plain test run checks agreement")
	}
	requireSpin(t)
	dm, ds := ir.Load([]byte(deadlock), "deadlock.yaml", ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatalf("%s", ds)
	}
	cases := []struct {
		m    *ir.Model
		want map[string]check.Status
	}{
		{loadTestdata(t, "held-calls.yaml", nil), map[string]check.Status{"HeldDecided": check.Holds, "HeldDecidedUnfair": check.Violated}},
		{loadTestdata(t, "held-calls.yaml", map[string]int{"POSTPONE": 1}), map[string]check.Status{"HeldDecided": check.Violated}},
		{loadTestdata(t, "held-calls.yaml", map[string]int{"RESET": 1}), map[string]check.Status{"CountsUp": check.Violated}},
		{dm, map[string]check.Status{"Stays": check.Violated, "SetFair": check.Holds}},
	}
	ctx := context.Background()
	held, failed := 0, 0
	for _, c := range cases {
		prog, err := check.Compile(c.m)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		for id, want := range c.want {
			r, err := check.Verify(ctx, prog, id, check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != want {
				t.Errorf("%s %s: Go checker says %s, want %s", c.m.Name, id, r.Status, want)
			}
			sr, err := RunSpin(ctx, dir, c.m, id, false)
			if err != nil {
				t.Fatal(err)
			}
			if sr.Violated != (want == check.Violated) {
				t.Errorf("%s %s (%v): SPIN says violated=%v, want %s\n%s", c.m.Name, id, c.m.Constants, sr.Violated, want, sr.Output)
			}
			if !strings.Contains(sr.Output, "acceptance   cycles") {
				t.Errorf("%s %s: pan did not search for acceptance cycles:\n%s", c.m.Name, id, sr.Output)
			}
			if want == check.Holds {
				held++
			} else {
				failed++
			}
		}
	}
	if held < 2 || failed < 2 {
		t.Errorf("%d holding and %d failing checks; the test needs at least two of each", held, failed)
	}
}
