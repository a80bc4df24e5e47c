package models

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
)

// No built-in model declares a symmetric domain: the a2a model's agents
// are not interchangeable, since S_delegate has agent 1 (the client) hand
// the task to agent 2 (the remote agent), and the typecheck refuses
// AgentID as symmetric for that write.
func TestBuiltinSymmetry(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range all {
		if sd := m.SymmetricDomains(); len(sd) != 0 {
			t.Errorf("%s declares %s symmetric: extend TestSymmetricA2A's comparison to it", m.Name, sd[0].Name)
		}
	}
	_, ds := symmetricA2A(t, 3, false)
	if !strings.Contains(ds.String(), `1 names one element of the symmetric domain AgentID`) {
		t.Errorf("a2a with AgentID symmetric as it stands: %s", ds)
	}
}

// symmetricA2A is the a2a model with AgentID declared symmetric and, when
// anyAgent, S_delegate generalised from "agent 1 hands the task to agent
// 2" to "an agent hands it to another", which makes the agents
// interchangeable.
func symmetricA2A(t *testing.T, agents int, anyAgent bool) (*ir.Model, ir.Diagnostics) {
	t.Helper()
	data, file, err := Source("a2a")
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	edits := [][2]string{
		{"{name: AgentID, type: int, min: 1, max: AGENTS}", "{name: AgentID, type: int, min: 1, max: AGENTS, symmetric: true}"},
		{`guard: "task == working && !delegated",
     writes: {delegated: true, "delegation[1][2]": "original_caps[1]"}`, `params: {a: AgentID, b: AgentID}, guard: "task == working && !delegated && a != b",
     writes: {delegated: true, "delegation[a][b]": "original_caps[a]"}`},
	}
	if !anyAgent {
		edits = edits[:1]
	}
	for _, r := range edits {
		if strings.Count(src, r[0]) != 1 {
			t.Fatalf("a2a.yaml no longer has %q", r[0])
		}
		src = strings.Replace(src, r[0], r[1], 1)
	}
	return ir.LoadWith([]byte(src), file, ir.ParseOptions{Defines: map[string]int{"AGENTS": agents}}, ir.LintOptions{})
}

// The a2a model with interchangeable agents keeps every verdict of the
// built-in one, plain and behind warden, with 2 and 3 agents, and so does
// its symmetry reduction: the same status, counterexamples of the same
// length, each an execution of the model; a holding invariant is shown
// over fewer states.
func TestSymmetricA2A(t *testing.T) {
	for _, agents := range []int{2, 3} {
		sm, ds := symmetricA2A(t, agents, true)
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		data, file, _ := Source("a2a")
		bm, _ := ir.LoadWith(data, file, ir.ParseOptions{Defines: map[string]int{"AGENTS": agents}}, ir.LintOptions{})
		for _, pair := range [][2]*ir.Model{{bm, sm}, {bm.Guarded(), sm.Guarded()}} {
			builtin, _ := check.Compile(pair[0])
			full, _ := check.Compile(pair[1])
			reduced, note := full.Reduced()
			if reduced.Permutations() != map[int]int{2: 2, 3: 6}[agents] {
				t.Fatalf("%s: %s", pair[1].Name, note)
			}
			for _, pr := range pair[1].Properties {
				want, _ := check.Verify(context.Background(), builtin, pr.ID, budget)
				unreduced := 0
				for _, p := range []*check.Program{full, reduced} {
					got, _ := check.Verify(context.Background(), p, pr.ID, budget)
					name := pair[1].Name + "/" + pr.ID
					if p == reduced {
						name += " reduced"
					}
					switch {
					case got.Status != want.Status:
						t.Errorf("%d agents, %s: %s, built-in %s", agents, name, got.Status, want.Status)
					case got.Status == check.Violated && got.Trace.Len() != want.Trace.Len():
						t.Errorf("%d agents, %s: counterexample of %d steps, built-in %d", agents, name, got.Trace.Len(), want.Trace.Len())
					case got.Status == check.Violated:
						if err := p.Replays(got.Trace); err != nil {
							t.Errorf("%d agents, %s: %v", agents, name, err)
						}
					case p == full:
						unreduced = got.States
					case pr.Kind == ir.Invariant && got.States >= unreduced:
						t.Errorf("%d agents, %s: %d states reduced, %d unreduced", agents, name, got.States, unreduced)
					}
				}
			}
		}
	}
}

// The a2a model with 3 interchangeable agents, explored whole with and
// without the reduction: the numbers docs/conform.md quotes (states
// exactly; times on the machine at hand, one worker).
func TestSymmetricA2AMeasured(t *testing.T) {
	m, ds := symmetricA2A(t, 3, true)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	want := map[string][2]int{"a2a": {141924, 24264}, "a2a+warden": {792, 272}}
	for _, v := range []*ir.Model{m, m.Guarded()} {
		full, _ := check.Compile(v)
		reduced, _ := full.Reduced()
		start := time.Now()
		a, _ := check.Check(context.Background(), full, "", check.Options{Workers: 1})
		ta := time.Since(start)
		start = time.Now()
		b, _ := check.Check(context.Background(), reduced, "", check.Options{Workers: 1})
		tb := time.Since(start)
		t.Logf("%s: %d states in %v unreduced, %d orbits in %v with %d permutations", v.Name, a.States, ta, b.States, tb, reduced.Permutations())
		if a.Status != check.Holds || b.Status != check.Holds || [2]int{a.States, b.States} != want[v.Name] {
			t.Errorf("%s: %d states, %d reduced; want %v", v.Name, a.States, b.States, want[v.Name])
		}
	}
}
