package crosscheck_test

import (
	"context"
	"testing"

	"github.com/agentwarden/warden/internal/conform/report"
)

// A held call that is never decided: the hold step cites an ambiguous
// clause on P5 (it is what put the call on hold), the property cites a
// clear one. The leads-to violation depends on the hold step.
func TestTriageLeadsTo(t *testing.T) {
	cat := triageCatalog(t)
	m := parseModel(t, `ir_version: 1
model: triage-live
protocol: MCP
spec_version: triage
variables:
  - {name: hold, type: enum, values: [none, held, decided], init: none}
  - {name: pings, type: bool}
transitions:
  - {id: T_hold, kind: Protocol, actor: server, trigger: hold, guard: "hold == none", writes: {hold: held},
     modality: MUST, source_refs: [T-AMB-P5]}
  - {id: T_ping, kind: Protocol, actor: client, trigger: ping, guard: "true", writes: {pings: "!pings"},
     modality: MUST, source_refs: [T-CLEAR-P5]}
properties:
  - {id: P5_decided, kind: leads-to, principle: P5, class: AASM-HARDENING, from: "hold == held", to: "hold == decided", source_refs: [T-CLEAR-P5]}
`)
	fs, err := report.CheckModel(context.Background(), m, cat, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := fs[0]
	t.Logf("%s %s %v actions %v cycle %v", f.Result, f.Triage, f.AmbiguousRefs, f.Actions, f.Cycle)
	if f.Triage != report.AmbiguityFail {
		t.Errorf("triage %s, want AMBIGUITY-FAIL: the hold step's unclear clause put the call on hold", f.Triage)
	}
}
