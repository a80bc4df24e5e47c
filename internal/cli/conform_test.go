package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runConformTest(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code, err := runConform(context.Background(), env, args)
	if err != nil {
		errb.WriteString(err.Error())
	}
	return code, out.String(), errb.String()
}

func TestConformLintBuiltin(t *testing.T) {
	code, out, errs := runConformTest(t, "lint", "--builtin")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if n := strings.Count(out, ": ok: model "); n != 10 {
		t.Errorf("want 10 models ok, got %d:\n%s", n, out)
	}
}

func TestConformLintReportsPositions(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad.yaml")
	src := "ir_version: 1\nmodel: bad\nprotocol: MCP\nvariables:\n  - {name: phase, type: enum, values: [a, b]}\n" +
		"transitions:\n  - id: T\n    kind: Protocol\n    guard: \"phse == a\"\n    modality: MUST\n    source_refs: [NOPE-1]\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runConformTest(t, "lint", file)
	if code != ExitConfig {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitConfig, out, errs)
	}
	for _, want := range []string{
		"bad.yaml:9:13: error: unknown variable \"phse\"",
		"refers to clause \"NOPE-1\", which the catalog does not have",
		"^",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

func TestConformCheckViolationExitsOne(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runConformTest(t, "check", "--model", "cs3-consent-bypass", "--out", dir, "--max-states", "10000")
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitFindings, out, errs)
	}
	if !strings.Contains(out, "CS_ConsentPreserved") || !strings.Contains(out, "needs adversary") {
		t.Errorf("output:\n%s", out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "traces", "cs3-consent-bypass", "CS_ConsentPreserved.itf.json"))
	if err != nil {
		t.Fatal(err)
	}
	var itf struct {
		States []map[string]any `json:"states"`
	}
	if err := json.Unmarshal(data, &itf); err != nil {
		t.Fatal(err)
	}
	if len(itf.States) != 3 { // initial state, plant directive, execute via ACP
		t.Errorf("trace has %d states, want 3", len(itf.States))
	}
}

func TestConformCheckBehindWardenExitsZero(t *testing.T) {
	code, out, errs := runConformTest(t, "check", "--model", "mcp", "--warden", "--max-states", "100000")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "0 violated, 0 incomplete") {
		t.Errorf("output:\n%s", out)
	}
}

func TestConformCheckBudget(t *testing.T) {
	code, out, _ := runConformTest(t, "check", "--model", "mcp", "--warden", "--max-states", "10")
	if code != ExitPartial || !strings.Contains(out, "stopped: max states") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func TestConformUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"frob"}, {"check"}, {"check", "--all", "--model", "mcp"}, {"emit"},
		{"emit", "--model", "nope"}, {"matrix", "--format", "pdf"}, {"replay"}, {"emit", "--format", "coq", "--model", "mcp"}} {
		if code, _, _ := runConformTest(t, args...); code != ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, ExitUsage)
		}
	}
}

func TestConformEmitPromela(t *testing.T) {
	code, out, errs := runConformTest(t, "emit", "--format", "promela", "--model", "mcp")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"active proctype main()", "#define inv_P4_prompt_integrity", "#ifdef CHECK_P4_prompt_integrity"} {
		if !strings.Contains(out, want) {
			t.Errorf("promela lacks %q", want)
		}
	}
}

func TestConformMatrixJSON(t *testing.T) {
	code, out, errs := runConformTest(t, "matrix", "--format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Cells []struct {
			Protocol, Principle, Result, Class, Triage string
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cells) != 55 {
		t.Fatalf("%d cells, want 5 × 11", len(doc.Cells))
	}
	seen := map[string]bool{}
	for _, c := range doc.Cells {
		seen[c.Protocol+"/"+c.Principle] = true
		if c.Result != "holds" && c.Result != "violated" || c.Class == "" || c.Triage == "" {
			t.Errorf("bad cell %+v", c)
		}
		if c.Result == "holds" && c.Triage != "PASS" {
			t.Errorf("cell %+v holds but is not PASS", c)
		}
	}
	if len(seen) != 55 {
		t.Errorf("%d distinct cells", len(seen))
	}
	// Findings the models are built to show.
	want := map[string]string{"MCP/SL": "violated", "MCP/P7": "holds", "A2A/P3": "violated", "ANP/SL": "violated", "ACP-Cap/SL": "holds"}
	for _, c := range doc.Cells {
		if w, ok := want[c.Protocol+"/"+c.Principle]; ok && c.Result != w {
			t.Errorf("%s/%s: %s, want %s", c.Protocol, c.Principle, c.Result, w)
		}
	}
}

func TestConformEmitTLA(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runConformTest(t, "emit", "--format", "tla", "--model", "acp-cap", "--out", dir)
	if code != ExitOK {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "acp_cap.tla"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(mod), "---- MODULE acp_cap ----") || !strings.Contains(string(mod), "Spec == Init /\\ [][Next]_vars") {
		t.Errorf("module:\n%s", mod)
	}
	cfgs, _ := filepath.Glob(filepath.Join(dir, "MC_*.cfg"))
	if len(cfgs) != 10 {
		t.Errorf("%d configurations, want one per invariant (10)", len(cfgs))
	}
}

// TestConformReplayMock: replay against the fake MCP server finds the
// known findings (exit 1); behind warden the leak is refused.
func TestConformReplayMock(t *testing.T) {
	code, out, errs := runConformTest(t, "replay", "--target", "mock:mcp-http", "--warden", "--format", "json", "--timeout", "3s")
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitFindings, out, errs)
	}
	var doc struct {
		Reports []struct {
			Target       string
			BehindWarden bool `json:"behind_warden"`
			Results      []struct{ Property, Outcome string }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Reports) != 2 || !doc.Reports[1].BehindWarden {
		t.Fatalf("want a plain and a behind-warden report: %s", out)
	}
	got := map[string]string{}
	for i, r := range doc.Reports {
		for _, res := range r.Results {
			got[fmt.Sprint(i)+"/"+res.Property] = res.Outcome
		}
	}
	for k, w := range map[string]string{"0/P4_prompt_integrity": "reproduced", "1/P4_prompt_integrity": "blocked",
		"0/SL_lifecycle": "reproduced", "1/WF_wire": "blocked"} {
		if got[k] != w {
			t.Errorf("%s: %s, want %s", k, got[k], w)
		}
	}
}

// TestConformMatrixAgainst: --against adds the implementation and
// behind-warden columns to the A2A cells (the fake agent, and the fake
// behind an in-process gateway), keeping the cells list's required fields;
// the HTML page is written alongside.
func TestConformMatrixAgainst(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runConformTest(t, "matrix", "--format", "json", "--against", "mock:a2a", "--out", dir, "--timeout", "3s")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Replay string
		Cells  []struct {
			Protocol, Principle, Result, Class, Triage string
			Implementation                             *struct{ Outcome, Triage string }
			BehindWarden                               *struct{ Outcome, Triage string } `json:"behind_warden"`
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	// principle → implementation outcome and triage, behind-warden outcome and triage
	want := map[string][4]string{
		"P1": {"reproduced", "IMPL-FAIL", "blocked", "PASS"},
		"P2": {"reproduced", "BOTH-FAIL", "blocked", "PASS"},
		"P3": {"reproduced", "BOTH-FAIL", "blocked", "PASS"},
		"WF": {"reproduced", "IMPL-FAIL", "blocked", "PASS"},
	}
	found := 0
	for _, c := range doc.Cells {
		if c.Protocol != "A2A" {
			if c.Implementation != nil || c.BehindWarden != nil {
				t.Errorf("%s × %s: a replay column for a protocol that was not replayed", c.Protocol, c.Principle)
			}
			continue
		}
		w, ok := want[c.Principle]
		if !ok {
			continue
		}
		found++
		if c.Implementation == nil || c.BehindWarden == nil ||
			[4]string{c.Implementation.Outcome, c.Triage, c.BehindWarden.Outcome, c.BehindWarden.Triage} != w {
			t.Errorf("A2A × %s against the fake agent: %+v / %+v, want %v", c.Principle, c.Implementation, c.BehindWarden, w)
		}
	}
	if found != len(want) || !strings.Contains(doc.Replay, "mock-a2a+warden") {
		t.Errorf("replay %q, %d of the %d A2A cells found", doc.Replay, found, len(want))
	}
	page, err := os.ReadFile(filepath.Join(dir, "matrix.html"))
	if err != nil || !strings.Contains(string(page), `<table id="matrix">`) || strings.Contains(string(page), "<script") {
		t.Errorf("matrix.html: %v", err)
	}
}

// userModel is a protocol author's model: a counter that starts below
// zero, and a property that fails once it reaches 2.
const userModel = `ir_version: 1
model: counter
protocol: MCP
variables:
  - {name: n, type: int, min: -1, max: 2, init: -1}
transitions:
  - {id: up, kind: Environment, assumption: the counter moves, writes: {n: "n + 1"}}
properties:
  - {id: small, principle: P6, class: AASM-HARDENING, expr: "n < 2"}
`

func writeModel(t *testing.T, dir, name, src string) string {
	t.Helper()
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// A user's model file is checked from the CLI, a negative initial value
// included: the counterexample is the three steps from -1 to 2.
func TestConformCheckUserModelFile(t *testing.T) {
	file := writeModel(t, t.TempDir(), "counter.yaml", userModel)
	code, out, errs := runConformTest(t, "check", "--model", file)
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitFindings, out, errs)
	}
	if !strings.Contains(out, "small") || !strings.Contains(out, "length 3") || !strings.Contains(out, "up → up → up") {
		t.Errorf("output:\n%s", out)
	}
}

// A directory of model files is checked model by model; an error in one
// file is reported at its position, with a caret, and exits 3.
func TestConformCheckModelDirectory(t *testing.T) {
	dir := t.TempDir()
	writeModel(t, dir, "counter.yaml", userModel)
	writeModel(t, dir, "other.yml", strings.Replace(strings.Replace(userModel, "model: counter", "model: other", 1), "n < 2", "n > -1 || n < 2", 1))
	writeModel(t, dir, "notes.txt", "not a model")
	code, out, errs := runConformTest(t, "check", "--model", dir)
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitFindings, out, errs)
	}
	if !strings.Contains(out, "counter") || !strings.Contains(out, "other") || !strings.Contains(out, "1 violated, 0 incomplete") {
		t.Errorf("output:\n%s", out)
	}

	writeModel(t, dir, "broken.yaml", strings.Replace(userModel, `expr: "n < 2"`, `expr: "m < 2"`, 1))
	code, out, errs = runConformTest(t, "check", "--model", dir)
	if code != ExitConfig {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitConfig, out, errs)
	}
	for _, want := range []string{"broken.yaml:9:62: error: unknown variable \"m\"", "^", "1 of 3 model files have errors"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

func TestConformEmitUserModel(t *testing.T) {
	dir := t.TempDir()
	file := writeModel(t, dir, "counter.yaml", userModel)
	code, out, errs := runConformTest(t, "emit", "--format", "tla", "--model", file)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"---- MODULE counter ----", "/\\ n = (-1)", "small == (n < 2)", "INVARIANT small"} {
		if !strings.Contains(out, want) {
			t.Errorf("TLA+ output lacks %q:\n%s", want, out)
		}
	}
	writeModel(t, dir, "other.yaml", strings.Replace(userModel, "model: counter", "model: other", 1))
	if code, out, errs := runConformTest(t, "emit", "--format", "promela", "--model", dir); code != ExitUsage {
		t.Errorf("two models to stdout: exit %d, want %d\n%s%s", code, ExitUsage, out, errs)
	}
	outDir := filepath.Join(t.TempDir(), "pml")
	if code, out, errs := runConformTest(t, "emit", "--format", "promela", "--model", dir, "--out", outDir); code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, f := range []string{"counter/counter.pml", "other/other.pml"} {
		data, err := os.ReadFile(filepath.Join(outDir, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "short n = -1;") {
			t.Errorf("%s:\n%s", f, data)
		}
	}
}

func TestConformMatrixUserModel(t *testing.T) {
	file := writeModel(t, t.TempDir(), "counter.yaml", userModel)
	code, out, errs := runConformTest(t, "matrix", "--model", file, "--format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, `"counter/small"`) || !strings.Contains(out, `"result": "violated"`) ||
		!strings.Contains(out, `"result": "not modelled"`) {
		t.Errorf("matrix:\n%s", out)
	}
}

// A check that stops at its state budget is not a pass: it says
// "incomplete" and exits 6.
func TestConformCheckIncompleteExitsNonZero(t *testing.T) {
	code, out, errs := runConformTest(t, "check", "--model", "mcp+warden", "--max-states", "3")
	if code != ExitPartial {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitPartial, out, errs)
	}
	if !strings.Contains(out, "stopped: max states") || !strings.Contains(out, "incomplete: ") {
		t.Errorf("output:\n%s", out)
	}
	if code, out, errs := runConformTest(t, "matrix", "--model", "mcp", "--max-states", "3", "--format", "json"); code != ExitPartial ||
		!strings.Contains(errs, "incomplete: ") {
		t.Errorf("matrix: exit %d, want %d\n%s%s", code, ExitPartial, out, errs)
	}
}

// A server that never answers and one that exits at once have defended
// nothing: every probe is inconclusive, none is blocked, and the command
// exits 6.
func TestConformReplaySilentOrCrashedIsInconclusive(t *testing.T) {
	for _, target := range []string{"stdio:sleep 30", "stdio:true"} {
		t.Run(target, func(t *testing.T) {
			// With a credential variable named, the stdio identity probe
			// starts the server too (without it, it has nothing to withhold).
			code, out, errs := runConformTest(t, "replay", "--target", target, "--timeout", "300ms",
				"--credential-env", "CONFORM_TEST_CREDENTIAL")
			if code != ExitPartial {
				t.Fatalf("exit %d, want %d\n%s%s", code, ExitPartial, out, errs)
			}
			var outcomes []string
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) > 2 && strings.HasPrefix(f[0], "mcp/") {
					outcomes = append(outcomes, f[2])
				}
			}
			if strings.Join(outcomes, " ") != strings.TrimSpace(strings.Repeat("inconclusive ", 5)) {
				t.Errorf("outcomes %v, want 5 × inconclusive:\n%s", outcomes, out)
			}
			want := "no answer to"
			if target == "stdio:true" {
				want = "the connection ended before"
			}
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
			if !strings.Contains(errs, "inconclusive: 5 probes gave no verdict") || strings.Contains(out, "gave no verdict") {
				t.Errorf("the inconclusive note belongs on stderr, not stdout (which may be JSON):\nstdout: %s\nstderr: %s", out, errs)
			}
		})
	}
}

// lint warns about a property that holds only because nothing in the model
// ever sets the flag it reads.
func TestConformLintWarnsVacuous(t *testing.T) {
	src := strings.Replace(userModel, "  - {name: n, type: int, min: -1, max: 2, init: -1}\n",
		"  - {name: n, type: int, min: -1, max: 2, init: -1}\n  - {name: leaked, type: bool}\n", 1) +
		"  - {id: no_leak, principle: P4, class: AASM-HARDENING, expr: \"!leaked\"}\n"
	file := writeModel(t, t.TempDir(), "counter.yaml", src)
	code, out, errs := runConformTest(t, "lint", file)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, `counter.yaml:11:5: warning: property "no_leak" holds vacuously`) ||
		!strings.Contains(errs, "leaked is always false") || strings.Contains(errs, `"small" holds vacuously`) {
		t.Errorf("stderr:\n%s", errs)
	}
}

// -D sets a model constant: the counterexample grows with the bound.
func TestConformCheckDefines(t *testing.T) {
	src := `ir_version: 1
model: agents
protocol: MCP
constants:
  - {name: AGENTS, value: 2}
variables:
  - {name: busy, type: int, min: 0, max: AGENTS}
transitions:
  - {id: start, kind: Environment, assumption: an agent starts, writes: {busy: "busy + 1"}}
properties:
  - {id: not_all_busy, principle: P6, class: AASM-HARDENING, expr: "busy < AGENTS"}
`
	file := writeModel(t, t.TempDir(), "agents.yaml", src)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "length 2"},
		{[]string{"-D", "AGENTS=3"}, "length 3"},
		{[]string{"-D", "AGENTS=5"}, "length 5"},
	} {
		code, out, errs := runConformTest(t, append([]string{"check", "--model", file}, c.args...)...)
		if code != ExitFindings || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, want %d and %q\n%s%s", c.args, code, ExitFindings, c.want, out, errs)
		}
	}
	code, out, errs := runConformTest(t, "check", "--model", file, "-D", "AGENT=3")
	if code != ExitConfig || !strings.Contains(errs, `-D AGENT: the model declares no constant "AGENT"`) {
		t.Errorf("unknown constant: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runConformTest(t, "check", "--model", file, "-D", "AGENTS"); code != ExitUsage {
		t.Errorf("-D without a value: exit %d\n%s%s", code, out, errs)
	}
}

// A user's model file with leads-to properties is checked from the CLI: a
// violation prints its lasso (prefix ⟲ cycle) and writes an ITF trace with
// "loop"; the held call that cannot be postponed is decided.
func TestConformCheckLeadsTo(t *testing.T) {
	file := filepath.Join("..", "conform", "testdata", "held-calls.yaml")
	dir := t.TempDir()
	code, out, errs := runConformTest(t, "check", "--model", file, "-D", "POSTPONE=1", "--out", dir)
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d: %s%s", code, ExitFindings, out, errs)
	}
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " HeldDecided ") {
			line = l
		}
	}
	if !strings.Contains(line, "violated") || !strings.Contains(line, "lasso, prefix 4 + cycle 4") || !strings.Contains(line, "⟲ Postpone → Ping → Resume → Ping") {
		t.Errorf("HeldDecided line: %q\n%s", line, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "traces", "held-calls", "HeldDecided.itf.json"))
	if err != nil {
		t.Fatal(err)
	}
	var itf struct {
		Loop   *int             `json:"loop"`
		States []map[string]any `json:"states"`
	}
	if err := json.Unmarshal(data, &itf); err != nil {
		t.Fatal(err)
	}
	if itf.Loop == nil || *itf.Loop != 4 || len(itf.States) != 8 {
		t.Errorf("loop %v over %d states", itf.Loop, len(itf.States))
	}
	code, out, _ = runConformTest(t, "check", "--model", file)
	if code != ExitFindings || !strings.Contains(out, "HeldDecided                  P5  AASM-HARDENING    holds") {
		t.Errorf("without postponing, exit %d:\n%s", code, out)
	}
}

// check's exit codes when a model is the problem or runs mixed: a model
// the checker cannot compile (an index a bound variable puts outside its
// domain, f[a + 1] with a = 2) is the user's error, exit 3, not an
// internal one;
// and a run with one property violated and another stopped at its budget
// exits 1 and still says which checks are incomplete.
func TestConformCheckExitMixed(t *testing.T) {
	dir := t.TempDir()
	write := func(name, props string) string {
		p := filepath.Join(dir, name)
		src := `ir_version: 1
model: mixed
protocol: MCP
constants:
  - {name: AGENTS, value: 2}
domains:
  - {name: Agent, type: int, min: 1, max: AGENTS}
variables:
  - {name: f, type: "Agent -> bool", init: "false"}
  - {name: n, type: int, min: 0, max: 50, init: 0}
transitions:
  - {id: Set, kind: Environment, assumption: an agent is flagged, params: {a: Agent}, writes: {"f[a]": "true"}}
  - {id: Inc, kind: Environment, assumption: progress, guard: "n < 50", writes: {n: n + 1}}
properties:
` + props
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.yaml", `  - {id: P, principle: P3, class: AASM-HARDENING, expr: "forall a in Agent: f[a + 1] => f[a]"}`+"\n")
	if code, out, errs := runConformTest(t, "check", "--model", bad); code != ExitConfig || !strings.Contains(errs, "outside its domain") {
		t.Errorf("an index outside its domain: exit %d, want %d with the reason\n%s%s", code, ExitConfig, out, errs)
	}
	// Early: violated at depth 1. Late: needs n == 50, past the budget.
	mixed := write("mixed.yaml", `  - {id: Early, principle: P3, class: AASM-HARDENING, expr: "!f[1]"}
  - {id: Late, principle: P6, class: AASM-HARDENING, expr: "n < 50"}
`)
	code, out, errs := runConformTest(t, "check", "--model", mixed, "--max-states", "40")
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitFindings, out, errs)
	}
	if !strings.Contains(out, "1 violated, 1 incomplete") || !strings.Contains(out, "incomplete: 1 of the checks stopped at a budget") {
		t.Errorf("a run with a violation and an incomplete check must say both:\n%s", out)
	}
}
