package cli

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// vacuityModel: deleg changes as agents hand on capabilities they hold,
// caps never changes, and the gate opens once (count reaches 1, never 2).
const vacuityModel = `ir_version: 1
model: vacuity
protocol: A2A
constants:
  - {name: AGENTS, value: 2}
domains:
  - {name: Agent, type: int, min: 1, max: AGENTS}
  - {name: Cap, type: enum, values: [read, exec]}
variables:
  - {name: caps, type: "ag: Agent -> set Cap", init: "if ag == 1 then {read, exec} else {read}"}
  - {name: deleg, type: "Agent -> Agent -> set Cap", init: "{}"}
  - {name: gate, type: "{open: bool, count: int [0..2]}"}
transitions:
  - id: Delegate
    kind: Environment
    assumption: an agent hands on a capability it holds
    params: {a: Agent, b: Agent, c: Cap}
    guard: "a != b && c in caps[a] && !(c in deleg[a][b])"
    writes: {"deleg[a][b]": "deleg[a][b] union {c}"}
  - {id: Open, kind: Environment, assumption: a, guard: "!gate.open && gate.count < 1", writes: {gate.open: "true", gate.count: "gate.count + 1"}}
  - {id: Close, kind: Environment, assumption: a, guard: "gate.open", writes: {gate.open: "false"}}
properties:
  - {id: RecordBound, principle: P6, class: AASM-HARDENING, expr: "gate.count <= 2"}
  - {id: RecordPremise, principle: P6, class: AASM-HARDENING, expr: "gate.count == 2 => !gate.open"}
  - {id: RecordVaries, principle: P6, class: AASM-HARDENING, expr: "gate.open => gate.count >= 1"}
  - {id: SetBound, principle: P6, class: AASM-HARDENING, expr: "card(deleg[1][2]) <= 2 && card(deleg[2][1]) <= 2"}
  - {id: SetVaries, principle: P6, class: AASM-HARDENING, expr: "read in deleg[2][1] => read in caps[2]"}
  - {id: QuantConstant, principle: P6, class: AASM-HARDENING, expr: "exists a in Agent: read in caps[a]"}
  - {id: QuantPremise, principle: P6, class: AASM-HARDENING, expr: "(exists a in Agent: exec in deleg[2][a]) => gate.count == 2"}
  - {id: QuantVaries, principle: P6, class: AASM-HARDENING, expr: "!(exists a in Agent: read in deleg[1][a]) || (forall b in Agent: read in caps[b])"}
`

// TestConformLintVacuity: lint warns about exactly the properties whose
// conditions are constant over the reachable states or whose premise never
// holds, over records, sets and quantifiers, and not about those that read
// a condition that changes.
func TestConformLintVacuity(t *testing.T) {
	file := writeModel(t, t.TempDir(), "vacuity.yaml", vacuityModel)
	code, out, errs := runConformTest(t, "lint", file)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var got []string
	for _, m := range regexp.MustCompile(`warning: property "(\w+)" holds vacuously: ([^\n]*)`).FindAllStringSubmatch(errs, -1) {
		got = append(got, m[1])
		switch {
		case strings.HasSuffix(m[1], "Premise") && !strings.Contains(m[2], "premise"),
			!strings.HasSuffix(m[1], "Premise") && !strings.Contains(m[2], "is always true"):
			t.Errorf("%s: the warning does not say why: %s", m[1], m[2])
		}
	}
	want := []string{"RecordBound", "RecordPremise", "SetBound", "QuantConstant", "QuantPremise"}
	if !slices.Equal(got, want) {
		t.Errorf("vacuous %v, want %v\n%s", got, want, errs)
	}
	// Every property holds; the non-vacuous ones are checked like the rest.
	code, out, errs = runConformTest(t, "check", "--model", file)
	if code != ExitOK || strings.Count(out, " holds ") != 8 {
		t.Errorf("check: exit %d\n%s%s", code, out, errs)
	}
}
