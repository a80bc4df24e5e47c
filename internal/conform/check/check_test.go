package check

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// counter: two processes each bump a shared counter; the invariant says it
// stays below 3, which needs three increments to break.
const counter = `ir_version: 1
model: counter
protocol: MCP
variables:
  - {name: n, type: int, min: 0, max: 4}
  - {name: a, type: bool}
  - {name: b, type: bool}
transitions:
  - {id: Inc, kind: Environment, assumption: test, guard: "n < 4", writes: {n: n + 1}}
  - {id: SetA, kind: Environment, assumption: test, guard: "!a", writes: {a: true}}
  - {id: SetB, kind: Adversary, adversary: DY, guard: "a && !b", writes: {b: true}}
properties:
  - {id: Small, principle: P6, class: AASM-HARDENING, expr: "n < 3"}
  - {id: NoB, principle: P6, class: AASM-HARDENING, expr: "!b"}
  - {id: Always, principle: P6, class: AASM-HARDENING, expr: "n <= 4"}
`

func compile(t *testing.T, src string) *Program {
	t.Helper()
	m, ds := ir.Load([]byte(src), "t.yaml", ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	p, err := Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestShortestCounterexample(t *testing.T) {
	p := compile(t, counter)
	r, err := Check(context.Background(), p, "Small", Options{})
	if err != nil {
		t.Fatal(err)
	}
	// n reaches 3 after exactly three Inc steps; nothing else changes n.
	if r.Status != Violated || r.Trace.Len() != 3 || !slices.Equal(r.Trace.Actions(), []string{"Inc", "Inc", "Inc"}) {
		t.Fatalf("status %s, trace %v", r.Status, r.Trace)
	}
	// Full state space: n in 0..4 × (a,b) in {ff, tf, tt} = 15 states.
	full, _ := Check(context.Background(), p, "Always", Options{})
	if full.Status != Holds || full.States != 15 {
		t.Errorf("status %s, %d states, want holds with 15", full.Status, full.States)
	}
}

func TestNoAdversary(t *testing.T) {
	p := compile(t, counter)
	r, _ := Check(context.Background(), p, "NoB", Options{NoAdversary: true})
	if r.Status != Holds {
		t.Errorf("without the adversary, b is never set: %s", r.Status)
	}
	r, _ = Check(context.Background(), p, "NoB", Options{})
	if r.Status != Violated || r.Trace.Len() != 2 || !r.Trace.UsesAdversary() {
		t.Errorf("with it: %s %v", r.Status, r.Trace)
	}
}

func TestBudgetsAndCancellation(t *testing.T) {
	p := compile(t, counter)
	r, _ := Check(context.Background(), p, "Always", Options{MaxStates: 4})
	if r.Status != Incomplete || r.Reason != "max states" {
		t.Errorf("max states: %s %s", r.Status, r.Reason)
	}
	r, _ = Check(context.Background(), p, "Always", Options{MaxDepth: 2})
	if r.Status != Incomplete || r.Reason != "max depth" {
		t.Errorf("max depth: %s %s", r.Status, r.Reason)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, _ = Check(ctx, p, "Always", Options{})
	if r.Status != Incomplete || r.Reason != "cancelled" {
		t.Errorf("cancelled: %s %s", r.Status, r.Reason)
	}
	if _, err := Check(context.Background(), p, "Nope", Options{}); err == nil {
		t.Error("unknown property accepted")
	}
}

// wide: 12 independent bits give 4096 states and frontiers large enough to
// be split among workers; the counterexample must not depend on how many.
func wide() string {
	var b strings.Builder
	b.WriteString("ir_version: 1\nmodel: wide\nprotocol: MCP\nvariables:\n")
	for i := range 12 {
		b.WriteString("  - {name: v" + string(rune('a'+i)) + ", type: bool}\n")
	}
	b.WriteString("transitions:\n")
	for i := range 12 {
		c := string(rune('a' + i))
		b.WriteString("  - {id: T" + c + ", kind: Environment, assumption: x, guard: \"!v" + c + "\", writes: {v" + c + ": true}}\n")
	}
	b.WriteString("properties:\n  - {id: NotAll, principle: P6, class: AASM-HARDENING, expr: \"!(va && vc && ve && vg && vi && vk)\"}\n")
	b.WriteString("  - {id: True, principle: P6, class: AASM-HARDENING, expr: \"va || !va\"}\n")
	return b.String()
}

func TestParallelIsDeterministic(t *testing.T) {
	p := compile(t, wide())
	var first *Result
	for _, w := range []int{1, 2, 4, 7} {
		r, _ := Check(context.Background(), p, "NotAll", Options{Workers: w})
		if r.Status != Violated || r.Trace.Len() != 6 {
			t.Fatalf("workers %d: %s len %d", w, r.Status, r.Trace.Len())
		}
		full, _ := Check(context.Background(), p, "True", Options{Workers: w})
		if full.States != 4096 || full.Edges != 12*2048 {
			t.Errorf("workers %d: %d states %d edges, want 4096 and %d", w, full.States, full.Edges, 12*2048)
		}
		if first == nil {
			first = r
		} else if !slices.Equal(first.Trace.Actions(), r.Trace.Actions()) {
			t.Errorf("workers %d: trace %v, with 1 worker %v", w, r.Trace.Actions(), first.Trace.Actions())
		}
	}
}

func TestProgressReported(t *testing.T) {
	p := compile(t, wide())
	var last Progress
	calls := 0
	_, _ = Check(context.Background(), p, "True", Options{Progress: func(pr Progress) { calls++; last = pr }})
	if calls == 0 || last.States != 4096 {
		t.Errorf("%d calls, last %+v", calls, last)
	}
}

func TestITF(t *testing.T) {
	p := compile(t, counter)
	r, _ := Check(context.Background(), p, "NoB", Options{})
	data, err := r.Trace.ITF()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Meta   map[string]any   `json:"#meta"`
		Vars   []string         `json:"vars"`
		States []map[string]any `json:"states"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Meta["format"] != "ITF" || doc.Meta["property"] != "NoB" || doc.Meta["adversary"] != true {
		t.Errorf("meta %v", doc.Meta)
	}
	if !slices.Equal(doc.Vars, []string{"n", "a", "b"}) || len(doc.States) != 3 {
		t.Fatalf("vars %v, %d states", doc.Vars, len(doc.States))
	}
	last := doc.States[2]
	meta := last["#meta"].(map[string]any)
	if meta["index"] != float64(2) || meta["action"] != "SetB" || meta["kind"] != "Adversary" || meta["adversary"] != "DY" {
		t.Errorf("last state meta %v", meta)
	}
	if last["b"] != true || last["n"] != float64(0) {
		t.Errorf("last state %v", last)
	}
}
