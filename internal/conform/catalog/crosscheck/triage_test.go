package crosscheck_test

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/agentwarden/warden/internal/conform/catalog"
	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/report"
)

// triageClauses is a hand-built catalog: one ambiguous clause on the
// property's principle (P4), one on another principle (SL), one clear
// clause on P4, and one clause on SL for a step the specification leaves
// NOT_SPECIFIED.
const triageClauses = `protocol: MCP
spec_version: triage
base_url: https://example.test
clauses:
  - {id: T-AMB-P4, doc: d, section: s, quote: q, modality: MUST, actor: server, principles: [P4], taxonomy: SPEC-MANDATED, ambiguous: true, note: unclear}
  - {id: T-AMB-SL, doc: d, section: s, quote: q, modality: MUST, actor: server, principles: [SL], taxonomy: SPEC-MANDATED, ambiguous: true, note: unclear}
  - {id: T-CLEAR-P4, doc: d, section: s, quote: q, modality: MAY, actor: server, principles: [P4], taxonomy: AASM-HARDENING}
  - {id: T-AMB-P5, doc: d, section: s, quote: q, modality: MUST, actor: server, principles: [P5], taxonomy: SPEC-MANDATED, ambiguous: true, note: unclear}
  - {id: T-CLEAR-P5, doc: d, section: s, quote: q, modality: MAY, actor: server, principles: [P5], taxonomy: AASM-HARDENING}
  - {id: T-NS-SL, doc: d, section: s, quote: "(no clause)", modality: NOT_SPECIFIED, actor: server, principles: [SL], taxonomy: APS-COMPLETENESS}
`

// triageModel: a handshake enables the step that taints the context. The
// handshake's clause is given by the case; the tainting step cites only a
// clear clause, as does the property.
func triageModel(handshakeRefs, handshakeModality string) string {
	return `ir_version: 1
model: triage
protocol: MCP
spec_version: triage
variables:
  - {name: phase, type: enum, values: [idle, ready], init: idle}
  - {name: noise, type: bool}
  - {name: tainted, type: bool}
transitions:
  - {id: T_handshake, kind: Protocol, actor: client, trigger: handshake, guard: "phase == idle", writes: {phase: ready},
     modality: ` + handshakeModality + `, source_refs: [` + handshakeRefs + `]}
  - {id: T_noise, kind: Protocol, actor: server, trigger: log line, guard: "!noise", writes: {noise: true},
     modality: MUST, source_refs: [T-AMB-P4]}
  - {id: T_taint, kind: Protocol, actor: server, trigger: tool output, guard: "phase == ready", writes: {tainted: true},
     modality: MAY, source_refs: [T-CLEAR-P4]}
properties:
  - {id: P4_prompt_integrity, principle: P4, class: AASM-HARDENING, expr: "!tainted", source_refs: [T-CLEAR-P4]}
`
}

func triageCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Load(fstest.MapFS{"c/t.yaml": {Data: []byte(triageClauses)}}, "c")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func parseModel(t *testing.T, src string) *ir.Model {
	t.Helper()
	m, diags := ir.Parse([]byte(src), "triage.yaml")
	if diags.HasErrors() {
		t.Fatalf("model: %v", diags)
	}
	return m
}

// An ambiguous clause on the counterexample's path makes the violation an
// AMBIGUITY-FAIL only when the violated property depends on it: a clause
// of a step that wrote what the property reads (or enabled such a step),
// and that bears on the property's principle.
func TestTriageAmbiguityOnlyFromDependencies(t *testing.T) {
	cat := triageCatalog(t)
	cases := []struct {
		name, refs, modality string
		want                 string
		wantRefs             []string
	}{
		// The handshake is on the path and enables the taint, but its
		// unclear clause is about the session lifecycle, not P4.
		{"ambiguous clause on another principle", "T-AMB-SL", "MUST", report.SpecFail, nil},
		// The same step, with a clause on P4 that is unclear: now the
		// violation depends on it.
		{"ambiguous clause on the principle", "T-AMB-P4", "MUST", report.AmbiguityFail, []string{"T-AMB-P4"}},
		// A handshake the specification leaves NOT_SPECIFIED, whose only
		// clause concerns SL and is not marked ambiguous: prompt integrity
		// does not depend on an unclear clause.
		{"NOT_SPECIFIED step on another principle", "T-NS-SL", "NOT_SPECIFIED", report.SpecFail, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := parseModel(t, triageModel(c.refs, c.modality))
			fs, err := report.CheckModel(context.Background(), m, cat, report.Options{})
			if err != nil {
				t.Fatal(err)
			}
			f := fs[0]
			if f.Result != string(check.Violated) || !slices.Equal(f.Actions, []string{"T_handshake", "T_taint"}) {
				t.Fatalf("counterexample %v (%s), want [T_handshake T_taint]", f.Actions, f.Result)
			}
			if f.Triage != c.want || !slices.Equal(f.AmbiguousRefs, c.wantRefs) {
				t.Errorf("triage %s %v, want %s %v", f.Triage, f.AmbiguousRefs, c.want, c.wantRefs)
			}
		})
	}
}

// Hand-built traces (not the checker's shortest ones) put steps on the path
// that the violation does not need: a step that writes nothing the
// property reads, and a step whose write of the property's variable a
// later step overwrites. Neither makes its ambiguous clause a dependency.
func TestTriageIgnoresStepsTheViolationDoesNotNeed(t *testing.T) {
	cat := triageCatalog(t)
	m := parseModel(t, `ir_version: 1
model: triage-dead
protocol: MCP
spec_version: triage
variables:
  - {name: noise, type: bool}
  - {name: tainted, type: bool}
transitions:
  - {id: T_noise, kind: Protocol, actor: server, trigger: log line, guard: "true", writes: {noise: true},
     modality: MUST, source_refs: [T-AMB-P4]}
  - {id: T_clean, kind: Protocol, actor: server, trigger: sanitizer runs, guard: "true", writes: {tainted: false},
     modality: MUST, source_refs: [T-AMB-P4]}
  - {id: T_taint, kind: Protocol, actor: server, trigger: tool output, guard: "true", writes: {tainted: true},
     modality: MAY, source_refs: [T-CLEAR-P4]}
properties:
  - {id: P4_prompt_integrity, principle: P4, class: AASM-HARDENING, expr: "!tainted", source_refs: [T-CLEAR-P4]}
`)
	for _, path := range [][]string{{"T_noise", "T_taint"}, {"T_clean", "T_taint"}} {
		tr := &check.Trace{Model: m, Property: "P4_prompt_integrity", Steps: []check.Step{{Action: -1}}}
		for _, id := range path {
			i := slices.IndexFunc(m.Transitions, func(x ir.Transition) bool { return x.ID == id })
			tr.Steps = append(tr.Steps, check.Step{Action: i})
		}
		label, refs := report.Triage(&check.Result{Status: check.Violated, Trace: tr}, m, cat)
		if label != report.SpecFail {
			t.Errorf("path %v: %s %v, want %s", path, label, refs, report.SpecFail)
		}
	}
}
