package promela

import (
	"testing"

	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/tla/advmodels"
)

// TestSpinAdversarial runs SPIN on generated models written to break the
// printer (package advmodels): every word TLA+, Promela, C, pan.c, the C
// library or the printers reserve as a variable, a record field, an enum
// value and an array cell (NameModels), names that collide once escaped
// or with the names the printer makes up, swaps and
// three-cycles of writes over negative domains, records, symmetric
// domains, leads-to properties and four seeded random models. Each Promela
// file must compile (spin -a, then gcc) and SPIN must agree with the Go
// checker on the state count, every verdict and the shortest
// counterexamples (agree). -short leaves out the random models and the
// variant with -D.
func TestSpinAdversarial(t *testing.T) {
	if raceEnabled {
		t.Skip("SPIN's pan programs are C: the race detector adds nothing; the plain test run checks agreement")
	}
	requireSpin(t)
	cases := append(advmodels.NameModels(60), advmodels.Collisions()...)
	cases = append(cases, advmodels.Semantics()...)
	if !testing.Short() {
		cases = append(cases, advmodels.Random(1, 4)...)
	}
	for _, c := range cases {
		name := c.Name
		if len(c.Defines) > 0 {
			name += "-D"
		}
		if c.Name == "bound-names" || testing.Short() && len(c.Defines) > 0 {
			continue // bound names do not reach Promela (quantifiers are expanded)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each subtest compiles and runs its own pan
			m, ds := ir.LoadWith([]byte(c.YAML), c.Name+".yaml", ir.ParseOptions{Defines: c.Defines}, ir.LintOptions{})
			if ds.HasErrors() {
				t.Fatalf("%s", ds.Format([]byte(c.YAML)))
			}
			agree(t, m)
		})
	}
}
