package check

import (
	"context"
	"strings"
	"testing"
)

// vacuous: a flag nobody sets, a premise that never holds, and two
// properties that do depend on what the model does.
const vacuous = `ir_version: 1
model: vacuous
protocol: MCP
variables:
  - {name: n, type: int, min: 0, max: 3}
  - {name: leaked, type: bool, doc: never written}
  - {name: open, type: bool}
  - {name: revoked, type: bool, doc: never written}
transitions:
  - {id: Inc, kind: Environment, assumption: test, guard: "n < 3", writes: {n: n + 1}}
  - {id: Open, kind: Environment, assumption: test, writes: {open: "!open"}}
properties:
  - {id: NoLeak, principle: P4, class: AASM-HARDENING, expr: "!leaked"}
  - {id: NeverFour, principle: P6, class: AASM-HARDENING, expr: "revoked => open"}
  - {id: Bounded, principle: P6, class: AASM-HARDENING, expr: "n <= 3 && (open || !open || n >= 0)"}
  - {id: OpenAtThree, principle: P6, class: AASM-HARDENING, expr: "n == 3 => open"}
  - {id: Low, principle: P6, class: AASM-HARDENING, expr: "n < 2 || open || !open"}
`

func TestVacuity(t *testing.T) {
	p := compile(t, vacuous)
	vs, err := Vacuity(context.Background(), p, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range vs {
		got[v.Property] = v.Why
	}
	if why := got["NoLeak"]; !strings.Contains(why, "leaked is always false") || !strings.Contains(why, "8 reachable states") {
		t.Errorf("NoLeak: %q", why)
	}
	if why := got["NeverFour"]; !strings.Contains(why, "premise revoked is false in all 8 reachable states") {
		t.Errorf("NeverFour: %q", why)
	}
	// Bounded reads n <= 3, which is always true, but also open, which
	// changes: not every condition is constant.
	for _, id := range []string{"Bounded", "Low"} {
		if why, ok := got[id]; ok {
			t.Errorf("%s reported vacuous: %s", id, why)
		}
	}
	// OpenAtThree is violated (n reaches 3 with open false): never vacuous.
	if why, ok := got["OpenAtThree"]; ok {
		t.Errorf("a violated property reported vacuous: %s", why)
	}
	if len(vs) != 2 {
		t.Errorf("got %d vacuous properties, want 2: %v", len(vs), vs)
	}
	if vs, _ := Vacuity(context.Background(), p, 3); vs != nil {
		t.Errorf("with a budget below the state count Vacuity must say nothing, got %v", vs)
	}
}

// kept: single conditions that hold over every reachable state. The
// paper's P3 holds because a guard keeps it (Delegate's writes would break
// it unguarded): not vacuous. A value no transition ever writes (denied),
// and a bound the types alone keep (n <= 3), hold whatever the protocol
// does: vacuous.
const kept = `ir_version: 1
model: kept
protocol: A2A
domains:
  - {name: Agent, type: int, min: 1, max: 2}
  - {name: Cap, type: enum, values: [read, exec]}
variables:
  - {name: caps, type: "a: Agent -> set Cap", init: "if a == 1 then {read, exec} else {read}"}
  - {name: deleg, type: "Agent -> set Cap", init: "{}"}
  - {name: st, type: enum, values: [idle, held, approved, denied]}
  - {name: n, type: int, min: 0, max: 3}
transitions:
  - id: Delegate
    kind: Environment
    assumption: an agent hands on a capability it holds
    params: {a: Agent, c: Cap}
    guard: "c in caps[a]"
    writes: {"deleg[a]": "deleg[a] union {c}"}
  - {id: Hold, kind: Environment, assumption: test, guard: "st == idle", writes: {st: held}}
  - {id: Approve, kind: Environment, assumption: test, guard: "st == held", writes: {st: approved}}
  - {id: Inc, kind: Environment, assumption: test, guard: "n < 3", writes: {n: n + 1}}
properties:
  - {id: Monotone, principle: P3, class: AASM-HARDENING, expr: "forall a in Agent: deleg[a] subseteq caps[a]"}
  - {id: NeverDenied, principle: P5, class: AASM-HARDENING, expr: "st != denied"}
  - {id: InRange, principle: P6, class: AASM-HARDENING, expr: "n <= 3"}
`

func TestVacuityOfConditionsAGuardKeeps(t *testing.T) {
	p := compile(t, kept)
	vs, err := Vacuity(context.Background(), p, 10000)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range vs {
		got[v.Property] = v.Why
	}
	if why, ok := got["Monotone"]; ok {
		t.Errorf("Monotone holds because Delegate's guard keeps it true, but was reported vacuous: %s", why)
	}
	if why := got["NeverDenied"]; !strings.Contains(why, "(st != denied) is always true") || !strings.Contains(why, "no transition's writes could make it false") {
		t.Errorf("NeverDenied: no transition writes denied, want it reported vacuous, got %q", why)
	}
	if why := got["InRange"]; !strings.Contains(why, "(n <= 3) is always true") {
		t.Errorf("InRange is true for every value of n's type, want it reported vacuous, got %q", why)
	}
	if len(vs) != 2 {
		t.Errorf("got %d vacuous properties, want 2: %v", len(vs), vs)
	}
}
