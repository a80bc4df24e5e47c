package ir

import (
	"strings"
	"testing"
)

// A leads-to property parses into From and To with weak fairness unless it
// says otherwise, and renders as P ~> Q.
func TestLeadsToParses(t *testing.T) {
	src := good + `  - {id: L_on, kind: leads-to, principle: SL, class: AASM-HARDENING, from: "phase == off", to: "phase == on"}
  - {id: L_unfair, kind: leads-to, fairness: none, principle: SL, class: AASM-HARDENING, from: flag, to: "n > 0"}
`
	m, ds := Load([]byte(src), "toy.yaml", LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	p, _ := m.Property("L_on")
	if p.Kind != LeadsTo || p.Fairness != WeakFairness || p.Expr != nil || p.String() != "(phase == off) ~> (phase == on)" {
		t.Errorf("L_on: kind %s fairness %s %q", p.Kind, p.Fairness, p.String())
	}
	if p, _ := m.Property("L_unfair"); p.Fairness != NoFairness {
		t.Errorf("L_unfair: fairness %s", p.Fairness)
	}
	if p, _ := m.Property("P_n"); p.Kind != Invariant || p.Fairness != "" {
		t.Errorf("P_n: kind %s fairness %q", p.Kind, p.Fairness)
	}
}

// Misuse of the property kinds is reported at its line and column, with
// its code.
func TestLeadsToDiagnostics(t *testing.T) {
	for _, c := range []struct{ prop, want string }{
		{`{id: L, kind: leads-to, principle: SL, class: AASM-HARDENING, from: flag}`, "t.yaml:18:5: error: leads-to property \"L\" needs from and to (from ~> to) [missing]"},
		{`{id: L, kind: leads-to, principle: SL, class: AASM-HARDENING, from: flag, to: flag, expr: flag}`, "t.yaml:18:95: error: leads-to property \"L\" has from and to, not expr (declared leads-to at t.yaml:18:19) [property-kind]"},
		{`{id: L, principle: SL, class: AASM-HARDENING, expr: flag, fairness: weak}`, "t.yaml:18:73: error: property \"L\": fairness applies to a leads-to property only; an invariant holds in every reachable state [property-kind]"},
		{`{id: L, principle: SL, class: AASM-HARDENING, expr: flag, to: flag}`, "t.yaml:18:5: error: property \"L\": from and to belong to a leads-to property (kind: leads-to); an invariant has expr [property-kind]"},
		{`{id: L, kind: eventually, principle: SL, class: AASM-HARDENING, expr: flag}`, "t.yaml:18:19: error: kind \"eventually\" is not one of [invariant leads-to] [invalid-kind]"},
		{`{id: L, kind: leads-to, fairness: strong, principle: SL, class: AASM-HARDENING, from: flag, to: "!flag"}`, "t.yaml:18:39: error: fairness \"strong\" is not one of [weak none] [invalid-fairness]"},
		{`{id: L, kind: leads-to, principle: SL, class: AASM-HARDENING, from: flag, to: "n + 1"}`, "t.yaml:18:86: error: expected bool, not int[1..4] [type-mismatch]"},
	} {
		_, ds := Load([]byte(good+"  - "+c.prop+"\n"), "t.yaml", LintOptions{})
		if !strings.Contains(ds.String(), c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.prop, ds, c.want)
		}
	}
}
