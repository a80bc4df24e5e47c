package report

import (
	"context"
	"slices"
	"testing"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
)

// A quantified property reads array cells through an index bound by its
// quantifier, not by naming them. The step that wrote the cell is one the
// violation depends on, so its ambiguous clause decides the triage; the
// step that only wrote a counter the property never reads is not.
const quantified = `ir_version: 1
model: deleg
protocol: A2A
domains:
  - {name: Agent, type: int, min: 1, max: 2}
  - {name: Cap, type: enum, values: [read, exec]}
variables:
  - {name: caps, type: "ag: Agent -> set Cap", init: "{read}"}
  - {name: deleg, type: "Agent -> Agent -> set Cap", init: "{}"}
  - {name: n, type: int, min: 0, max: 1}
transitions:
  - {id: Tick, kind: Protocol, modality: MUST, source_refs: [T-01], writes: {n: "1"}, guard: "n == 0"}
  - {id: Give, kind: Protocol, modality: MAY, source_refs: [G-01], params: {a: Agent, b: Agent, c: Cap}, guard: "a != b && n == 1", writes: {"deleg[a][b]": "deleg[a][b] union {c}"}}
properties:
  - {id: P3, principle: P3, class: AASM-HARDENING, source_refs: [P-01], expr: "forall ag1 in Agent, ag2 in Agent: ag1 != ag2 => deleg[ag1][ag2] subseteq caps[ag1]"}
`

func TestDependsOnReadsQuantifiedArrays(t *testing.T) {
	m, ds := ir.Load([]byte(quantified), "q.yaml", ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	prog, err := check.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := check.Check(context.Background(), prog, "P3", check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != check.Violated {
		t.Fatalf("P3 is %v, want violated", res.Status)
	}
	var ids []string
	for _, tr := range dependsOn(res.Trace, &m.Properties[0]) {
		ids = append(ids, tr.ID)
	}
	// Give wrote the cell; Tick only enabled it (its write is read by
	// Give's guard, so it counts too, as a step the violation needed).
	if !slices.Equal(ids, []string{"Tick", "Give"}) {
		t.Fatalf("depends on %v, want [Tick Give]: the step that wrote deleg[a][b], and the one its guard read", ids)
	}
}
