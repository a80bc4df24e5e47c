package check

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentwarden/warden/internal/conform/ir"
)

func loadDelegation(t *testing.T, agents int) *Program {
	t.Helper()
	file := filepath.Join("..", "testdata", "delegation.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m, ds := ir.LoadWith(data, file, ir.ParseOptions{Defines: map[string]int{"AGENTS": agents}}, ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	p, err := Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The paper's P3, written with quantifiers over arrays of sets, checked
// with 2 and 3 agents (the paper's bounds): every delegation cell off the
// diagonal takes each of the 4 subsets of {read, exec}, and the shortest
// violation is one step, agent 2 handing on exec, which it never held.
func TestQuantifiedDelegation(t *testing.T) {
	for _, c := range []struct{ agents, states int }{{2, 16}, {3, 4096}} {
		p := loadDelegation(t, c.agents)
		full, err := Check(context.Background(), p, "Bounded", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if full.Status != Holds || full.States != c.states {
			t.Errorf("%d agents: Bounded is %s over %d states, want holds over %d", c.agents, full.Status, full.States, c.states)
		}
		r, _ := Check(context.Background(), p, "P3", Options{})
		if r.Status != Violated || r.Trace.Len() != 1 {
			t.Fatalf("%d agents: P3 is %s, trace %v", c.agents, r.Status, r.Trace)
		}
		tr := &p.Model().Transitions[r.Trace.Steps[1].Action]
		if got := tr.Label(); got != "Delegate(a=2, b=1, c=exec)" {
			t.Errorf("%d agents: the violating step is %s, want Delegate(a=2, b=1, c=exec)", c.agents, got)
		}
		// exists: agent 1 is handed exec by nobody until someone does; with
		// 2 agents that is one step (2 hands exec to 1), with 3 it takes
		// both others.
		r, _ = Check(context.Background(), p, "SomeoneHolds", Options{})
		want := c.agents - 1
		if r.Status != Violated || r.Trace.Len() != want {
			t.Errorf("%d agents: SomeoneHolds is %s, trace %v, want violated in %d", c.agents, r.Status, r.Trace.Actions(), want)
		}
	}
}

// Behind a guard that checks the paper's condition before each delegation,
// P3 holds: the counterexample comes from the missing check, not from the
// encoding of sets and quantifiers.
func TestQuantifiedDelegationGuarded(t *testing.T) {
	p := loadDelegation(t, 3)
	m := p.Model()
	g := *m
	g.Transitions = slices.Clone(m.Transitions)
	for i := range g.Transitions {
		tr := &g.Transitions[i]
		a, c := tr.Args[0].Val, tr.Args[2].Val
		owned := m.Vars[m.Arrays[0].First+a-1].Init>>c&1 == 1
		if !owned {
			tr.Guard = &ir.Expr{Op: ir.OpConst, Val: 0, Type: ir.Type{Kind: ir.Bool}}
		}
	}
	gp, err := Compile(&g)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := Check(context.Background(), gp, "P3", Options{})
	// Agent 1 may hand anything to 2 and 3 (4*4 states); agents 2 and 3
	// only read, to the two others each (2^4).
	if r.Status != Holds || r.States != 16*16 {
		t.Errorf("guarded P3 is %s over %d states, want holds over 256", r.Status, r.States)
	}
}
