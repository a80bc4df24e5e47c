package cli

import (
	"bytes"
	"context"
	"encoding/json"
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
	if code != ExitOK || !strings.Contains(out, "stopped: max states") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func TestConformUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"frob"}, {"check"}, {"check", "--all", "--model", "mcp"}, {"emit"},
		{"emit", "--model", "nope"}, {"matrix", "--format", "html"}} {
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
