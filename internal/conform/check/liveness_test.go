package check

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/ir"
)

func heldCalls(t *testing.T, defines map[string]int) *Program {
	t.Helper()
	file := filepath.Join("..", "testdata", "held-calls.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m, ds := ir.LoadWith(data, file, ir.ParseOptions{Defines: defines}, ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatalf("%s", ds)
	}
	p, err := Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pack is the packed state of decoded values.
func pack(p *Program, vals []int) []uint64 {
	k := make([]uint64, p.words)
	for i, v := range vals {
		p.slots[i].set(k, v)
	}
	return k
}

// checkLasso requires the trace to be a lasso of real steps (lassoError).
func checkLasso(t *testing.T, p *Program, r *Result) {
	t.Helper()
	if err := lassoError(p, r); err != nil {
		t.Fatal(err)
	}
}

// lassoError says why r's trace is not a lasso of real steps, or is nil:
// each step must be its transition fired from the step before, and the
// closing action fired from the last state must give the cycle's first
// state (or, for a stutter, nothing is enabled in it); the property's
// premise must hold at some step after which (cycle included) its goal
// never does.
func lassoError(p *Program, r *Result) error {
	tr := r.Trace
	if tr == nil || tr.Cycle == nil {
		return fmt.Errorf("%s: %s without a lasso", r.Property, r.Status)
	}
	if tr.Cycle.Start < 0 || tr.Cycle.Start >= len(tr.Steps) {
		return fmt.Errorf("cycle starts at %d of %d steps", tr.Cycle.Start, len(tr.Steps))
	}
	out := make([]uint64, p.words)
	for i := 1; i < len(tr.Steps); i++ {
		if !p.trans[tr.Steps[i].Action].fire(pack(p, tr.Steps[i-1].Values), out) || !slices.Equal(out, pack(p, tr.Steps[i].Values)) {
			return fmt.Errorf("step %d (%s) does not follow from step %d", i, p.model.Transitions[tr.Steps[i].Action].ID, i-1)
		}
	}
	last := pack(p, tr.Steps[len(tr.Steps)-1].Values)
	if tr.Cycle.Action < 0 {
		for ti := range p.trans {
			if p.trans[ti].fire(last, out) {
				return fmt.Errorf("the cycle stutters in a state where %s is enabled", p.model.Transitions[ti].ID)
			}
		}
	} else if !p.trans[tr.Cycle.Action].fire(last, out) || !slices.Equal(out, pack(p, tr.Steps[tr.Cycle.Start].Values)) {
		return fmt.Errorf("closing action %s does not lead from the last state back to step %d", p.model.Transitions[tr.Cycle.Action].ID, tr.Cycle.Start)
	}
	// Some state where the premise holds must be followed by none where
	// the goal does, the cycle's states included.
	pr, _ := p.model.Property(r.Property)
	from, to := p.compile(pr.From), p.compile(pr.To)
	lastGoal, premise := -1, -1
	for i, s := range tr.Steps {
		k := pack(p, s.Values)
		if to(k) != 0 {
			lastGoal, premise = i, -1
		}
		if premise < 0 && from(k) != 0 && to(k) == 0 {
			premise = i
		}
	}
	if lastGoal >= tr.Cycle.Start {
		return fmt.Errorf("the goal %s holds at step %d, in the cycle from step %d", pr.To, lastGoal, tr.Cycle.Start)
	}
	if premise < 0 {
		return fmt.Errorf("the premise %s holds at no step after the goal's last (step %d)", pr.From, lastGoal)
	}
	return nil
}

// Every held call is eventually decided or expires under weak fairness;
// without fairness Ping can run forever while the call waits; and when the
// decision can be postponed and resumed without end, weak fairness does
// not help (Decide is not continuously enabled).
func TestLeadsToHeldCalls(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		defines map[string]int
		prop    string
		want    Status
		cycle   []string // expected cycle actions, in order from the cycle's start, or nil
	}{
		{nil, "HeldDecided", Holds, nil},
		{nil, "HeldDecidedUnfair", Violated, []string{"Ping", "Ping"}},
		{map[string]int{"POSTPONE": 1}, "HeldDecided", Violated, nil},
		{nil, "CountsUp", Holds, nil},
		{map[string]int{"RESET": 1}, "CountsUp", Violated, nil},
		{nil, "DecidedForever", Violated, nil},
	}
	for _, c := range cases {
		p := heldCalls(t, c.defines)
		r, err := Verify(ctx, p, c.prop, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != c.want {
			t.Errorf("%s %v: %s, want %s", c.prop, c.defines, r.Status, c.want)
			continue
		}
		if r.States != 32 && r.States != 40 {
			t.Errorf("%s %v: %d states", c.prop, c.defines, r.States)
		}
		if c.want != Violated {
			if r.Trace != nil {
				t.Errorf("%s holds but has a trace", c.prop)
			}
			continue
		}
		checkLasso(t, p, r)
		if c.cycle != nil && !slices.Equal(r.Trace.CycleActions(), c.cycle) {
			t.Errorf("%s: cycle %v, want %v", c.prop, r.Trace.CycleActions(), c.cycle)
		}
		if c.defines["POSTPONE"] == 1 && !slices.Contains(r.Trace.CycleActions(), "Postpone") {
			t.Errorf("the postponing lasso does not postpone: %v", r.Trace.CycleActions())
		}
	}
}

// A deadlocked state repeats forever: "x ~> !x" fails on a stutter, whose
// cycle is the last state alone.
func TestLeadsToStutter(t *testing.T) {
	p := compile(t, `ir_version: 1
model: stutter
protocol: MCP
variables:
  - {name: x, type: bool}
transitions:
  - {id: Set, kind: Environment, assumption: test, guard: "!x", writes: {x: true}}
properties:
  - {id: Stays, kind: leads-to, principle: SL, class: AASM-HARDENING, from: x, to: "!x"}
  - {id: Sets, kind: leads-to, fairness: none, principle: SL, class: AASM-HARDENING, from: "!x", to: x}
`)
	r, err := Verify(context.Background(), p, "Stays", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Violated {
		t.Fatalf("Stays: %s", r.Status)
	}
	checkLasso(t, p, r)
	if r.Trace.Cycle.Action != -1 || r.Trace.Cycle.Start != 1 || !slices.Equal(r.Trace.CycleActions(), []string{"stutter"}) {
		t.Errorf("cycle %+v %v, want a stutter at step 1", r.Trace.Cycle, r.Trace.CycleActions())
	}
	// The initial state is no deadlock: even without fairness, Set runs.
	if r, _ := Verify(context.Background(), p, "Sets", Options{}); r.Status != Holds {
		t.Errorf("Sets: %s", r.Status)
	}
}

// Adversary transitions left out are no fairness obligation either, and
// budgets give an incomplete result.
func TestLeadsToOptions(t *testing.T) {
	p := heldCalls(t, nil)
	r, _ := Verify(context.Background(), p, "HeldDecided", Options{MaxStates: 5})
	if r.Status != Incomplete || r.Reason != "max states" {
		t.Errorf("max states: %s %s", r.Status, r.Reason)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := CheckLeadsTo(ctx, p, "Nope", Options{}); err == nil {
		t.Error("an unknown property is no error")
	}
	if r, _ := Verify(context.Background(), p, "HeldDecided", Options{MaxDepth: 1}); r.Status != Incomplete {
		t.Errorf("max depth: %s", r.Status)
	}
}

// The lasso is in the ITF trace: "loop" is the index of the cycle's first
// state, and #meta says which action closes it.
func TestLeadsToITF(t *testing.T) {
	p := heldCalls(t, map[string]int{"POSTPONE": 1})
	r, _ := Verify(context.Background(), p, "HeldDecided", Options{})
	raw, err := r.Trace.ITF()
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for _, want := range []string{`"leads_to": "(hold == held) ~> ((hold == decided) || (hold == expired))"`, `"fairness": "weak"`,
		`"loop": ` + itoa(r.Trace.Cycle.Start), `"loop_action": "` + r.Trace.CycleActions()[len(r.Trace.CycleActions())-1] + `"`} {
		if !strings.Contains(s, want) {
			t.Errorf("ITF lacks %s:\n%s", want, s)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// lint's vacuity check reads leads-to properties: a premise that never
// holds, or a goal that holds wherever the premise does, is reported; the
// held-calls properties, whose premises hold and goals take steps to
// reach, are not.
func TestLeadsToVacuity(t *testing.T) {
	p := compile(t, `ir_version: 1
model: vacuous
protocol: MCP
variables:
  - {name: x, type: bool}
  - {name: n, type: int, min: 0, max: 2}
transitions:
  - {id: Set, kind: Environment, assumption: test, guard: "!x", writes: {x: true}}
  - {id: Inc, kind: Environment, assumption: test, guard: "n < 2", writes: {n: n + 1}}
properties:
  - {id: Never, kind: leads-to, principle: SL, class: AASM-HARDENING, from: "n > 2", to: x}
  - {id: AtOnce, kind: leads-to, principle: SL, class: AASM-HARDENING, from: "x && n == 2", to: "n >= 1"}
  - {id: Real, kind: leads-to, principle: SL, class: AASM-HARDENING, from: "n == 0", to: "n == 2"}
`)
	vs, err := Vacuity(context.Background(), p, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range vs {
		got[v.Property] = v.Why
	}
	if !strings.Contains(got["Never"], "premise (n > 2) is false in all 6 reachable states") {
		t.Errorf("Never: %q", got["Never"])
	}
	if !strings.Contains(got["AtOnce"], "holds at once") {
		t.Errorf("AtOnce: %q", got["AtOnce"])
	}
	if got["Real"] != "" || len(vs) != 2 {
		t.Errorf("findings %v", got)
	}
	if vs, _ := Vacuity(context.Background(), heldCalls(t, nil), 1000); len(vs) != 0 {
		t.Errorf("held calls: %v", vs)
	}
}
