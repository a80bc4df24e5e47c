package check

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// loadAgents compiles ../testdata/agents.yaml (a symmetric domain Agent)
// with the given number of agents, unreduced and reduced.
func loadAgents(t *testing.T, agents int) (full, reduced *Program) {
	return loadAgentsEdited(t, agents, "", "")
}

// loadAgentsEdited is loadAgents with the text old replaced by new.
func loadAgentsEdited(t *testing.T, agents int, old, new string) (full, reduced *Program) {
	t.Helper()
	file := filepath.Join("..", "testdata", "agents.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if old != "" {
		data = []byte(strings.Replace(string(data), old, new, 1))
	}
	m, ds := ir.LoadWith(data, file, ir.ParseOptions{Defines: map[string]int{"AGENTS": agents}}, ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	full, err = Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	reduced, note := full.Reduced()
	if reduced == full {
		t.Fatalf("not reduced: %s", note)
	}
	return full, reduced
}

// reachable lists every state of the unreduced program, by a plain BFS of
// its own.
func reachable(p *Program) [][]int {
	seen := map[string]bool{keyOf(p.init): true}
	queue := [][]uint64{p.init}
	var out [][]int
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		out = append(out, p.values(k))
		for ti := range p.trans {
			next := make([]uint64, p.words)
			if p.trans[ti].fire(k, next) && !seen[keyOf(next)] {
				seen[keyOf(next)] = true
				queue = append(queue, next)
			}
		}
	}
	return out
}

// allPerms lists the permutations of 0..n-1.
func allPerms(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var out [][]int
	for _, q := range allPerms(n - 1) {
		for i := 0; i < n; i++ {
			r := append(append(append([]int{}, q[:i]...), n-1), q[i:]...)
			out = append(out, r)
		}
	}
	return out
}

// renameAgents applies the renaming agent a ↦ pi[a-1]+1 to a state given
// as one value per variable, reading the model's declarations: cells move
// with their renamed indices, values of Agent and members of a set of
// Agent are renamed. It is written apart from symmetry.go on purpose.
func renameAgents(m *ir.Model, vals []int, pi []int) []int {
	ren := func(a int) int { return pi[a-1] + 1 }
	value := func(t ir.Type, v int) int {
		switch {
		case t.Kind == ir.Set && t.Elem.Sym == "Agent":
			out := 0
			for a := 1; a <= t.Elem.Size(); a++ {
				if v>>(a-1)&1 == 1 {
					out |= 1 << (ren(a) - 1)
				}
			}
			return out
		case t.Sym == "Agent":
			return ren(v)
		}
		return v
	}
	out := make([]int, len(vals))
	for i, v := range m.Vars {
		to := i
		if v.Index != nil {
			a := &m.Arrays[v.Array]
			idx := slices.Clone(v.Index)
			for k := range idx {
				if a.Index[k].Sym == "Agent" {
					idx[k] = ren(idx[k])
				}
			}
			to, _ = a.Cell(idx)
		}
		out[to] = value(v.Type, vals[i])
	}
	return out
}

// With symmetry the checker stores exactly one state per orbit: the
// number of orbits is counted here by brute force, renaming every
// reachable state of the unreduced model by every permutation of the
// agents.
func TestSymmetryStoresOneStatePerOrbit(t *testing.T) {
	for _, agents := range []int{2, 3} {
		full, reduced := loadAgents(t, agents)
		states := reachable(full)
		seen := map[string]bool{}
		orbits := 0
		for _, s := range states {
			if seen[fmt.Sprint(s)] {
				continue
			}
			orbits++
			for _, pi := range allPerms(agents) {
				seen[fmt.Sprint(renameAgents(full.model, s, pi))] = true
			}
		}
		if len(seen) != len(states) {
			t.Fatalf("%d agents: renaming leaves the reachable states (%d images, %d states)", agents, len(seen), len(states))
		}
		rf, _ := Check(context.Background(), full, "", Options{})
		rr, _ := Check(context.Background(), reduced, "", Options{})
		t.Logf("%d agents: %d states, %d orbits; reduced search %d states", agents, rf.States, orbits, rr.States)
		if rf.States != len(states) || rr.Status != Holds || rr.States != orbits || orbits >= len(states) {
			t.Errorf("%d agents: unreduced %d states (brute force %d), reduced %d %s, want the %d orbits",
				agents, rf.States, len(states), rr.States, rr.Status, orbits)
		}
		if got := reduced.Permutations(); got != len(allPerms(agents)) {
			t.Errorf("%d agents: %d permutations", agents, got)
		}
	}
	// Three agents whose only state is their phase: the orbits are the
	// multisets of 3 phases out of 3, C(5, 3) = 10, of 3^3 = 27 states.
	file := filepath.Join("..", "testdata", "agents.yaml")
	data, _ := os.ReadFile(file)
	m, ds := ir.Load(data, file, ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	phases := *m
	phases.Transitions = nil
	for _, tr := range m.Transitions {
		if tr.ID == "Try" || tr.ID == "Barge" {
			tr.Guard = &ir.Expr{Op: ir.OpConst, Val: 1, Type: ir.Type{Kind: ir.Bool}}
			tr.Writes = tr.Writes[:1] // pc[a] only: idle → trying, anything → critical
			phases.Transitions = append(phases.Transitions, tr)
		}
		if tr.ID == "Leave" {
			tr.Writes = tr.Writes[:1]
			phases.Transitions = append(phases.Transitions, tr)
		}
	}
	p, err := Compile(&phases)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := p.Reduced()
	rf, _ := Check(context.Background(), p, "", Options{})
	rr, _ := Check(context.Background(), r, "", Options{})
	if rf.States != 27 || rr.States != 10 {
		t.Errorf("phases only: %d states, %d reduced; want 27 and 10", rf.States, rr.States)
	}
}

// concreteRun asserts that tr is an execution of the unreduced program p
// that ends in a state violating the invariant property: it starts in the
// initial state, and each step's transition, fired in the state before it,
// gives the step's state.
func concreteRun(t *testing.T, p *Program, tr *Trace, property string) {
	t.Helper()
	cur := p.pack(tr.Steps[0].Values)
	if !equalWords(cur, p.init) {
		t.Fatalf("%s: the trace does not start in the initial state", property)
	}
	next := make([]uint64, p.words)
	for i, st := range tr.Steps[1:] {
		if !p.trans[st.Action].fire(cur, next) || !slices.Equal(p.values(next), st.Values) {
			t.Fatalf("%s: step %d (%s) is not a step of the model", property, i+1, p.model.Transitions[st.Action].Label())
		}
		copy(cur, next)
	}
	if p.props[property](cur) != 0 {
		t.Fatalf("%s: the trace's last state satisfies the property", property)
	}
}

// Every property of the symmetric model has the same verdict with and
// without the reduction, with and without the adversary; a violation's
// counterexample has the shortest length and is an execution of the
// unreduced model that ends in a violating state. With the phases encoded
// in reverse (idle last), the least words put the busy agent last, so the
// chain of canonical states is not itself an execution (Try(a=1) leads to
// a state where agent 3 tries) and the trace must be rebuilt.
func TestSymmetrySameVerdicts(t *testing.T) {
	for _, c := range []struct {
		agents        int
		reverse       bool
		canonicalRuns bool // the canonical chains happen to be executions
	}{{2, false, true}, {3, false, true}, {2, true, false}, {3, true, false}} {
		agents := c.agents
		full, reduced := loadAgents(t, agents)
		if c.reverse {
			full, reduced = loadAgentsEdited(t, agents, "values: [idle, trying, critical]", "values: [critical, trying, idle]")
		}
		violated, canonicalOnly := 0, 0
		for _, pr := range full.model.Properties {
			for _, noAdv := range []bool{false, true} {
				opts := Options{NoAdversary: noAdv}
				a, err := Verify(context.Background(), full, pr.ID, opts)
				if err != nil {
					t.Fatal(err)
				}
				b, err := Verify(context.Background(), reduced, pr.ID, opts)
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%d agents (reversed %v), %s, no adversary %v", agents, c.reverse, pr.ID, noAdv)
				if a.Status != b.Status {
					t.Errorf("%s: %s unreduced, %s reduced", name, a.Status, b.Status)
					continue
				}
				if pr.Kind == ir.LeadsTo {
					if b.States != a.States {
						t.Errorf("%s: a leads-to property is checked unreduced; %d states, want %d", name, b.States, a.States)
					}
					continue
				}
				if pr.Kind == ir.Invariant && a.Status == Holds && b.States >= a.States {
					t.Errorf("%s: reduced %d states, unreduced %d", name, b.States, a.States)
				}
				if a.Status != Violated {
					continue
				}
				violated++
				if a.Trace.Len() != b.Trace.Len() {
					t.Errorf("%s: counterexample of %d steps reduced, %d unreduced", name, b.Trace.Len(), a.Trace.Len())
				}
				concreteRun(t, full, b.Trace, pr.ID)
				// The canonical chain itself is not always an execution.
				if c, _ := Check(context.Background(), reduced, pr.ID, opts); !isRun(full, c.Trace) {
					canonicalOnly++
				}
			}
		}
		if violated < 4 {
			t.Errorf("%d agents: only %d violations to compare", agents, violated)
		}
		if (canonicalOnly == 0) != c.canonicalRuns {
			t.Errorf("%d agents, reversed %v: %d of %d canonical chains are not executions", agents, c.reverse, canonicalOnly, violated)
		}
	}
}

// isRun reports whether tr is an execution of p from its initial state.
func isRun(p *Program, tr *Trace) bool {
	cur := p.pack(tr.Steps[0].Values)
	next := make([]uint64, p.words)
	for _, st := range tr.Steps[1:] {
		if !p.trans[st.Action].fire(cur, next) || !slices.Equal(p.values(next), st.Values) {
			return false
		}
		copy(cur, next)
	}
	return equalWords(p.pack(tr.Steps[0].Values), p.init)
}

// Two symmetric domains are renamed independently: the 2×3 bool matrices
// (64 states) fall into the 13 classes of a 2×3 matrix up to permuting its
// rows and its columns (Burnside over the 2!·3! = 12 renamings). A
// domain with too many permutations leaves the model unreduced, and says
// so.
func TestSymmetryDomainsAndLimit(t *testing.T) {
	const src = `ir_version: 1
model: grid
protocol: A2A
constants:
  - {name: COLS, value: 3}
domains:
  - {name: Row, type: int, min: 1, max: 2, symmetric: true}
  - {name: Col, type: enum, values: [x, y, z], symmetric: true}
  - {name: Wide, type: int, min: 1, max: COLS, symmetric: true}
variables:
  - {name: cell, type: "Row -> Col -> bool", init: "false"}
  - {name: w, type: "set Wide", init: "{}"}
transitions:
  - {id: Set, kind: Environment, assumption: any cell may be set, params: {r: Row, c: Col}, writes: {"cell[r][c]": "true"}}
properties:
  - {id: NotFull, principle: P3, class: AASM-HARDENING, expr: "exists r in Row, c in Col: !cell[r][c]"}
  - {id: Empty, principle: P3, class: AASM-HARDENING, expr: "card(w) == 0"}
`
	m, ds := ir.Load([]byte(src), "grid.yaml", ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	p, err := Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	r, note := p.Reduced()
	if r.Permutations() != 2*6*6 || note != "symmetry: 72 permutations of Row × Col × Wide" {
		t.Fatalf("%d permutations: %s", r.Permutations(), note)
	}
	full, _ := Check(context.Background(), p, "Empty", Options{})
	red, _ := Check(context.Background(), r, "Empty", Options{})
	if full.States != 64 || red.States != 13 {
		t.Errorf("%d states, %d reduced; want 64 and 13", full.States, red.States)
	}
	v, _ := Verify(context.Background(), r, "NotFull", Options{})
	if v.Status != Violated || v.Trace.Len() != 6 || r.Replays(v.Trace) != nil {
		t.Errorf("NotFull: %s, %v", v.Status, r.Replays(v.Trace))
	}

	m, ds = ir.LoadWith([]byte(src), "grid.yaml", ir.ParseOptions{Defines: map[string]int{"COLS": 7}}, ir.LintOptions{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	p, _ = Compile(m)
	if r, note := p.Reduced(); r != p || r.Permutations() != 0 || note != "symmetry: off, Row × Col × Wide has more than 720 permutations" {
		t.Errorf("7 elements: %d permutations, %q", r.Permutations(), note)
	}
}
