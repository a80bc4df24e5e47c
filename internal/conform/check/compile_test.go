package check

import (
	"context"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// cellsModel has an array over Agent whose property is substituted by
// each case of TestCompileRefusesCellOutsideDomain.
const cellsModel = `ir_version: 1
model: cells
protocol: MCP
constants:
  - {name: AGENTS, value: 2}
domains:
  - {name: Agent, type: int, min: 1, max: AGENTS}
variables:
  - {name: f, type: "Agent -> bool", init: "false"}
transitions:
  - {id: Set, kind: Environment, assumption: an agent is flagged, params: {a: Agent}, writes: {"f[a]": "true"}}
properties:
  - PROPERTY
`

// An index that is an expression of constants or bound variables (not a
// literal) is not checked against its domain by the typecheck, so a model
// whose property reads f[AGENTS + 1] loaded without a diagnostic and
// Compile panicked ("index outside its domain"), taking `warden conform
// check` down. Compile now returns an error at the expression's position
// (with the bound variables' values), for invariants and leads-to
// properties alike; a typecheck that reports it first is as good.
func TestCompileRefusesCellOutsideDomain(t *testing.T) {
	for _, c := range []struct{ prop, at string }{
		{`{id: P, principle: P3, class: AASM-HARDENING, expr: "!f[AGENTS + 1]"}`, "cells.yaml:13:"},
		{`{id: P, principle: P3, class: AASM-HARDENING, expr: "forall a in Agent: f[a + 1] => f[a]"}`, "(with a = 2)"},
		{`{id: P, principle: P3, class: AASM-HARDENING, expr: "!f[0 - 1]"}`, "cells.yaml:13:"},
		{`{id: L, kind: leads-to, principle: P3, class: AASM-HARDENING, from: "f[1]", to: "f[AGENTS + 1]"}`, "cells.yaml:13:"},
	} {
		src := strings.Replace(cellsModel, "PROPERTY", c.prop, 1)
		m, ds := ir.Load([]byte(src), "cells.yaml", ir.LintOptions{})
		if ds.HasErrors() {
			continue // the typecheck caught it
		}
		p, err := Compile(m)
		if err == nil {
			r, _ := Verify(context.Background(), p, m.Properties[0].ID, Options{})
			t.Errorf("%s: compiled, and checked as %s", c.prop, r.Status)
			continue
		}
		if !strings.Contains(err.Error(), "outside its domain") || !strings.Contains(err.Error(), c.at) {
			t.Errorf("%s: %v; want the cell outside its domain, at %q", c.prop, err, c.at)
		}
	}
}
