package tla

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// gridModel has three symmetric domains, one of them an enum, and names
// that the printer's own would clash with: a variable p (a binder of the
// permutations), a variable Row_1 (an element's model value) and a
// property Symmetry.
const gridModel = `ir_version: 1
model: grid
protocol: A2A
domains:
  - {name: Row, type: int, min: 1, max: 2, symmetric: true}
  - {name: Col, type: enum, values: [x, y, z], symmetric: true}
  - {name: Wide, type: int, min: 1, max: 3, symmetric: true}
variables:
  - {name: cell, type: "Row -> Col -> bool", init: "false"}
  - {name: w, type: "set Wide", init: "{}"}
  - {name: p, type: bool, init: "false"}
  - {name: Row_1, type: bool, init: "false"}
transitions:
  - {id: Set, kind: Environment, assumption: any cell may be set, params: {r: Row, c: Col}, writes: {"cell[r][c]": "true"}}
  - {id: Add, kind: Environment, assumption: any, params: {v: Wide}, guard: "!(v in w)", writes: {w: "w union {v}", p: "true"}}
properties:
  - {id: NotFull, principle: P3, class: AASM-HARDENING, expr: "exists r in Row, c in Col: !cell[r][c]"}
  - {id: Symmetry, principle: P3, class: AASM-HARDENING, expr: "card(w) <= 2 || Row_1"}
  - {id: Fills, kind: leads-to, principle: P3, class: AASM-HARDENING, from: "p", to: "card(w) == 3"}
`

// loadModel reads a model of ../testdata (file) or the source src.
func loadModel(t *testing.T, file, src string, defines map[string]int) *ir.Model {
	t.Helper()
	data := []byte(src)
	if file != "" {
		file = filepath.Join("..", "testdata", file)
		var err error
		if data, err = os.ReadFile(file); err != nil {
			t.Fatal(err)
		}
	} else {
		file = "inline.yaml"
	}
	m, ds := ir.LoadWith(data, file, ir.ParseOptions{Defines: defines}, ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatalf("%s", ds)
	}
	return m
}

// symmetricModels are the models the symmetry tests print: agents.yaml
// with 2 and 3 agents, and the grid.
func symmetricModels(t *testing.T) []*ir.Model {
	return []*ir.Model{
		loadModel(t, "agents.yaml", "", map[string]int{"AGENTS": 2}),
		loadModel(t, "agents.yaml", "", nil),
		loadModel(t, "", gridModel, nil),
	}
}

// A symmetric domain prints as a set of model values and the module
// defines its permutations, which the configuration of every invariant
// names with SYMMETRY and that of a leads-to property leaves out (TLC's
// symmetry reduction is unsound for liveness). Before, the agents were
// the integers 1..3, which TLC cannot permute.
func TestSymmetricModule(t *testing.T) {
	m := loadModel(t, "agents.yaml", "", nil)
	var b strings.Builder
	if err := Emit(&b, m); err != nil {
		t.Fatal(err)
	}
	src := b.String()
	for _, want := range []string{
		"\nCONSTANTS Agent_1, Agent_2, Agent_3\n",
		"\nAgent == {Agent_1, Agent_2, Agent_3}\n",
		"\nSymmetry == {p \\in [Agent -> Agent] : \\A y \\in Agent : \\E x \\in Agent : p[x] = y}\n",
		"  /\\ pc \\in [Agent -> {\"idle\", \"trying\", \"critical\"}]\n",
		"  /\\ holder \\in SUBSET Agent\n",
		"  /\\ self = [i1 \\in Agent |-> IF i1 = Agent_1 THEN Agent_1 ELSE IF i1 = Agent_2 THEN Agent_2 ELSE Agent_3]\n",
		"Leave_2 ==\n  /\\ (pc[Agent_2] = \"critical\")\n  /\\ holder' = (holder \\ {Agent_2})\n",
		"Grant_1_3 ==\n  /\\ (((Agent_1 # Agent_3) /\\ (pc[Agent_1] = \"critical\")) /\\ (~granted[Agent_1][Agent_3]))\n",
		"Mutex == (\\A a \\in Agent : (\\A b \\in Agent : ((a # b) => (~((pc[a] = \"critical\") /\\ (pc[b] = \"critical\"))))))\n",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("module lacks %q", want)
		}
	}
	if strings.Contains(src, "1..3") {
		t.Errorf("an agent is still an integer:\n%s", src)
	}
	for _, tc := range []struct {
		prop     string
		symmetry bool
	}{{"Mutex", true}, {"SelfKept", true}, {"TryEnters", false}} {
		cfg, err := Config(m, tc.prop, false)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(cfg, "\nCONSTANTS\n  Agent_1 = Agent_1\n  Agent_2 = Agent_2\n  Agent_3 = Agent_3\n") {
			t.Errorf("%s: the model values are not assigned:\n%s", tc.prop, cfg)
		}
		if got := strings.Contains(cfg, "\nSYMMETRY Symmetry\n"); got != tc.symmetry {
			t.Errorf("%s: SYMMETRY %v, want %v:\n%s", tc.prop, got, tc.symmetry, cfg)
		}
	}
	if cfg, _ := Config(m, "TryEnters", false); !strings.Contains(cfg, "leads-to") || !strings.Contains(cfg, "PROPERTY TryEnters\n") {
		t.Errorf("the leads-to configuration does not say why it has no SYMMETRY:\n%s", cfg)
	}
}

// Several symmetric domains: the symmetry set is their product (one
// permutation of each, applied to its own elements), the group the Go
// checker reduces by; an enum's values are model values too; and every
// name the printer makes up steers clear of the model's (p, Row_1,
// Symmetry).
func TestSymmetricDomainsProduct(t *testing.T) {
	m := loadModel(t, "", gridModel, nil)
	var b strings.Builder
	if err := Emit(&b, m); err != nil {
		t.Fatal(err)
	}
	src := b.String()
	for _, want := range []string{
		"\nCONSTANTS Row_1_, Row_2, Col_x, Col_y, Col_z, Wide_1, Wide_2, Wide_3\n",
		"\nCol == {Col_x, Col_y, Col_z}\n",
		"\nPerms_Col == {p_ \\in [Col -> Col] : \\A y \\in Col : \\E x \\in Col : p_[x] = y}\n",
		"\nSymmetry_ ==\n  {[x \\in Row \\cup Col \\cup Wide |-> IF x \\in Row THEN p1[x] ELSE IF x \\in Col THEN p2[x] ELSE p3[x]] :\n" +
			"     p1 \\in Perms_Row, p2 \\in Perms_Col, p3 \\in Perms_Wide}\n",
		"  /\\ cell \\in [Row -> [Col -> BOOLEAN]]\n",
		"Set_2_z ==\n  /\\ cell' = [cell EXCEPT ![Row_2][Col_z] = TRUE]\n",
		"\nSymmetry == ((Cardinality(w) <= 2) \\/ Row_1)\n",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("module lacks %q:\n%s", want, src)
		}
	}
	cfg, err := Config(m, "Symmetry", false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg, "\nSYMMETRY Symmetry_\n") || !strings.Contains(cfg, "\nINVARIANT Symmetry\n") || !strings.Contains(cfg, "  Col_y = Col_y\n") {
		t.Errorf("configuration:\n%s", cfg)
	}
	for _, m := range symmetricModels(t) {
		t.Run(m.Name, func(t *testing.T) { checkSyntax(t, m) })
	}
}
