package models

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/catalog"
	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
)

var update = flag.Bool("update", false, "rewrite the golden counterexamples under testdata/")

var budget = check.Options{MaxStates: 200_000}

func TestBuiltinModelsLintClean(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(Order) {
		t.Fatalf("%d models, want %d", len(all), len(Order))
	}
	protocols := map[string]bool{}
	patterns := map[int]bool{}
	for _, m := range all {
		data, file, _ := Source(strings.TrimSuffix(filepath.Base(m.File), ".yaml"))
		_, ds := ir.Load(data, file, ir.LintOptions{Clause: cat.Has})
		if len(ds) > 0 { // warnings too: a built-in model is clean
			t.Errorf("%s:\n%s", m.Name, ds)
		}
		// Every reference resolves to a clause of a protocol the model is about.
		for _, tr := range m.Transitions {
			for _, id := range tr.SourceRefs {
				cl, ok := cat.Clause(id)
				if !ok {
					t.Errorf("%s/%s: unknown clause %s", m.Name, tr.ID, id)
				} else if want := append([]string{m.Protocol}, m.Protocols...); !slices.Contains(want, cl.Protocol) {
					t.Errorf("%s/%s cites %s, a %s clause", m.Name, tr.ID, id, cl.Protocol)
				}
			}
		}
		if m.IsComposition() {
			patterns[m.Pattern] = true
		} else {
			protocols[m.Protocol] = true
			var ps []string
			for _, p := range m.Properties {
				ps = append(ps, p.Principle)
			}
			for _, pr := range ir.Principles[:10] {
				if !slices.Contains(ps, pr) {
					t.Errorf("%s has no %s property", m.Name, pr)
				}
			}
		}
	}
	if len(protocols) != 5 || len(patterns) != 5 {
		t.Errorf("protocols %v, patterns %v", protocols, patterns)
	}
}

// Behind warden every property of every model holds, and no transition
// that the gateway does not block outright becomes dead.
func TestGuardedVariantsHold(t *testing.T) {
	all, _ := All()
	for _, m := range all {
		g := m.Guarded()
		p, err := check.Compile(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range g.Properties {
			r, err := check.Verify(context.Background(), p, pr.ID, budget)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != check.Holds {
				t.Errorf("%s: %s is %s: %v", g.Name, pr.ID, r.Status, r.Trace.Actions())
			}
		}
	}
}

// The shortest counterexamples, with the reasoning that gives each length.
// A change to a model that changes one of these must change this table.
var shortest = []struct {
	model, property string
	length          int
	adversary       bool
	why             string
}{
	{"mcp", "SL_lifecycle", 1, false, "the very first step may be a tools/call the server answers before initialize"},
	{"mcp", "P1_identity", 3, false, "initialize, initialized, then a call with no token (authorization is OPTIONAL)"},
	{"mcp", "P8_revocation", 2, false, "obtain a token, then shut down: nothing revokes it"},
	{"mcp", "P2_manifest", 4, true, "initialize, initialized, forge the list, call the forged tool"},
	{"mcp", "P4_prompt_integrity", 5, true, "plant, initialize, initialized, call (result carries the directive), result enters the model"},
	{"mcp", "WF_wire", 2, true, "send a duplicate-member frame, the server parses it"},
	{"a2a", "P2_card", 2, true, "forge the card, use it"},
	{"a2a", "P3_delegation", 5, true, "authenticate, send, work, delegate, re-delegate beyond the grant"},
	{"a2a", "P8_revocation", 6, false, "authenticate, send, work, AUTH_REQUIRED, credentials, cancel: the credential stays live"},
	{"anp", "P7_fail_secure", 3, false, "open, negotiation fails, fall back to a default"},
	{"acp-client", "P3_workspace", 5, true, "initialize, prompt, plant, read tool output, write outside the workspace"},
	{"cs1-tool-delegation", "CS_NoLeakage", 3, true, "plant, the bridge calls the tool, the bridge delegates exec"},
	{"cs2-chained-tools", "CS_NoCredentialForwarding", 2, false, "start A with secrets, A spawns B with its environment"},
	{"cs3-consent-bypass", "CS_ConsentPreserved", 2, true, "plant the routing directive, execute over ACP-Cap"},
	{"cs5-federated", "CS_MutualVerification", 1, false, "delegate across the boundary before anyone verifies anyone"},
}

func TestShortestCounterexamples(t *testing.T) {
	for _, c := range shortest {
		t.Run(c.model+"/"+c.property, func(t *testing.T) {
			m, err := Get(c.model)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := check.Compile(m)
			r, err := check.Check(context.Background(), p, c.property, budget)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != check.Violated {
				t.Fatalf("%s", r.Status)
			}
			if r.Trace.Len() != c.length || r.Trace.UsesAdversary() != c.adversary {
				t.Errorf("length %d adversary %v (%v), want %d %v: %s", r.Trace.Len(), r.Trace.UsesAdversary(),
					r.Trace.Actions(), c.length, c.adversary, c.why)
			}
			golden(t, filepath.Join("testdata", c.model, c.property+".itf.json"), r.Trace)
		})
	}
}

func golden(t *testing.T, file string, tr *check.Trace) {
	t.Helper()
	got, err := tr.ITF()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update after checking the change):\n%s", file, got)
	}
}

// A checker that finds nothing proves nothing: drop the 401 rule from the
// MCP model and P7 must break; restore it and P7 holds.
func TestSeededBugIsCaught(t *testing.T) {
	data, file, err := Source("mcp")
	if err != nil {
		t.Fatal(err)
	}
	const rule = `guard: "phase == ready && auth != expired"`
	if !bytes.Contains(data, []byte(rule)) {
		t.Fatal("the MCP model no longer has the 401 guard this test removes")
	}
	buggy := bytes.Replace(data, []byte(rule), []byte(`guard: "phase == ready"`), 1)
	cat, _ := catalog.Default()
	for _, c := range []struct {
		src    []byte
		status check.Status
		length int
	}{
		// authorize, initialize, initialized, token expires, call: 5 steps.
		{buggy, check.Violated, 5},
		{data, check.Holds, 0},
	} {
		m, ds := ir.Load(c.src, file, ir.LintOptions{Clause: cat.Has})
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		p, _ := check.Compile(m)
		r, _ := check.Check(context.Background(), p, "P7_fail_secure", budget)
		if r.Status != c.status {
			t.Fatalf("status %s, want %s", r.Status, c.status)
		}
		if r.Status == check.Violated && (r.Trace.Len() != c.length || r.Trace.Actions()[r.Trace.Len()-1] != "C_call_tool") {
			t.Errorf("trace %v, want %d steps ending in C_call_tool", r.Trace.Actions(), c.length)
		}
	}
}

// The paper: only domain isolation in the federated model holds by
// construction among the composition invariants.
func TestCompositionInvariants(t *testing.T) {
	all, _ := All()
	var holds []string
	n := 0
	for _, m := range all {
		if !m.IsComposition() {
			continue
		}
		p, _ := check.Compile(m)
		for _, pr := range m.Properties {
			if pr.Principle != "CS" {
				continue
			}
			n++
			if r, _ := check.Verify(context.Background(), p, pr.ID, budget); r.Status == check.Holds {
				holds = append(holds, m.Name+"/"+pr.ID)
			}
		}
	}
	if !slices.Equal(holds, []string{"cs5-federated/CS_DomainIsolation"}) || n < 15 {
		t.Errorf("%d CS invariants; holding: %v", n, holds)
	}
}

// The a2a model states P3 as the paper writes it (Listing 1): for all
// agents ag1 # ag2, delegation[ag1][ag2] is a subset of original_caps[ag1].
// With 2 and with 3 agents (the paper's bounds) the specification lets an
// agent hand on exec, which nobody was granted; behind warden, whose rule is
// that condition, P3 holds.
func TestPaperP3WithQuantifier(t *testing.T) {
	data, file, err := Source("a2a")
	if err != nil {
		t.Fatal(err)
	}
	for _, agents := range []int{2, 3} {
		m, ds := ir.LoadWith(data, file, ir.ParseOptions{Defines: map[string]int{"AGENTS": agents}}, ir.LintOptions{})
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		pr, _ := m.Property("P3_delegation")
		if pr.Expr.Op != ir.OpForall || pr.Expr.Args[0].Op != ir.OpForall {
			t.Fatalf("P3 is not quantified: %s", pr.Expr)
		}
		p, _ := check.Compile(m)
		r, _ := check.Check(context.Background(), p, "P3_delegation", budget)
		if r.Status != check.Violated {
			t.Fatalf("%d agents: P3 %s", agents, r.Status)
		}
		last := r.Trace.Steps[len(r.Trace.Steps)-1]
		if got := m.Transitions[last.Action].Label(); got != "A_amplify(from=2, to=1, c=exec)" {
			t.Errorf("%d agents: last step %s", agents, got)
		}
		g, _ := check.Compile(m.Guarded())
		r, _ = check.Check(context.Background(), g, "P3_delegation", budget)
		if r.Status != check.Holds {
			t.Errorf("%d agents behind warden: P3 %s", agents, r.Status)
		}
	}
}

// The MCP model's lifecycle property: every held call is eventually
// decided or expires. It holds under weak fairness, plain and behind
// warden; it fails without fairness (another transition may run forever
// while the call waits), and in a variant where the host may put the
// decision off and come back to it without end (deciding is then never
// continuously enabled, so weak fairness does not force it).
func TestMCPHeldCallsAreDecided(t *testing.T) {
	src, file, err := Source("mcp")
	if err != nil {
		t.Fatal(err)
	}
	load := func(t *testing.T, src string) *ir.Model {
		t.Helper()
		m, ds := ir.Load([]byte(src), file, ir.LintOptions{})
		if ds.HasErrors() {
			t.Fatalf("%s", ds)
		}
		return m
	}
	verify := func(t *testing.T, m *ir.Model) *check.Result {
		t.Helper()
		p, err := check.Compile(m)
		if err != nil {
			t.Fatal(err)
		}
		r, err := check.Verify(context.Background(), p, "P5_hold_decided", budget)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	m := load(t, string(src))
	if pr, _ := m.Property("P5_hold_decided"); pr.Kind != ir.LeadsTo || pr.Fairness != ir.WeakFairness {
		t.Fatalf("P5_hold_decided: %s under %s fairness", pr.Kind, pr.Fairness)
	}
	for _, v := range []*ir.Model{m, m.Guarded()} {
		if r := verify(t, v); r.Status != check.Holds {
			t.Errorf("%s: %s under weak fairness", v.Name, r.Status)
		}
	}
	unfair := strings.Replace(string(src), "{id: P5_hold_decided, kind: leads-to,", "{id: P5_hold_decided, kind: leads-to, fairness: none,", 1)
	if unfair == string(src) {
		t.Fatal("no P5_hold_decided in mcp.yaml")
	}
	r := verify(t, load(t, unfair))
	if r.Status != check.Violated || r.Trace.Cycle == nil || slices.Contains(r.Trace.CycleActions(), "E_user_decides") {
		t.Fatalf("without fairness: %s %v", r.Status, r.Trace)
	}
	postpone := strings.Replace(string(src), "transitions:\n", `  - {name: postponed, type: bool, doc: the host put the prompt off}
transitions:
`, 1)
	postpone = strings.Replace(postpone, "properties:\n", `  - {id: C_postpone, kind: Environment, assumption: the host puts the prompt off, guard: "hold == held", writes: {hold: none, postponed: true}}
  - {id: C_resume, kind: Environment, assumption: the host shows the prompt again, guard: "postponed", writes: {hold: held, postponed: false}}
properties:
`, 1)
	r = verify(t, load(t, postpone))
	if r.Status != check.Violated || !slices.Contains(r.Trace.CycleActions(), "C_postpone") || !slices.Contains(r.Trace.CycleActions(), "C_resume") {
		t.Fatalf("postponed forever: %s, cycle %v", r.Status, r.Trace.CycleActions())
	}
	t.Logf("postponed forever: prefix %v, cycle %v", r.Trace.Actions()[:r.Trace.Cycle.Start], r.Trace.CycleActions())
}
