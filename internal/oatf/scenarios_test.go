package oatf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScenarioLibrary loads every document of the vendored scenario library
// (../shared/oatf/scenarios): each must parse, validate without errors and
// normalize, with ValidateOptions.Library (the library uses a Perl regex
// lookahead, which strict OATF rejects). The library's indicator field tier
// and attack.x-scoring are the documented extension: they must warn, never
// fail.
func TestScenarioLibrary(t *testing.T) {
	dir := filepath.Join(filepath.Dir(conformanceDir(t)), "scenarios")
	var files []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatalf("no scenarios under %s", dir)
	}
	tiered, scored := 0, 0
	for _, f := range files {
		doc, diags := ValidateOptions{Library: true}.Load(f)
		if doc == nil {
			for _, d := range Errors(diags) {
				t.Errorf("%s", d)
			}
			continue
		}
		if hasRule(diags, RuleTierExtension) {
			tiered++
		}
		if hasRule(Warnings(diags), RuleScoringExtension) {
			scored++
		}
		// Every document is multi-actor after normalization, with ids on
		// all indicators.
		if doc.Attack().Get("execution").Get("actors") == nil {
			t.Errorf("%s: normalized document has no actors", f)
		}
		for _, ref := range doc.IndicatorRefs() {
			if ref.ID == "" {
				t.Errorf("%s: an indicator has no id after normalization", f)
			}
		}
	}
	if tiered == 0 || scored == 0 {
		t.Errorf("%d scenarios reported the tier extension, %d x-scoring; the library uses both", tiered, scored)
	}
	t.Logf("%d scenarios load and validate; %d use tier, %d x-scoring", len(files), tiered, scored)
}

// TestScoringExtension: attack.x-scoring is accepted with one warning at its
// key, kept through normalize and serialize; another x- key is not warned
// about.
func TestScoringExtension(t *testing.T) {
	const src = `oatf: "0.1"
attack:
  id: TEST-001
  x-scoring:
    max_tier: 3
    impact: high
  x-team: red
  execution:
    mode: mcp_server
    state:
      tools: []
  indicators:
    - target: "tools[*].description"
      pattern:
        contains: "id_rsa"
`
	raw, diags := Parse("scoring.yaml", []byte(src))
	if raw == nil {
		t.Fatalf("parse: %v", diags)
	}
	doc, diags := ValidateOptions{}.LoadDocument(raw, diags)
	if doc == nil {
		t.Fatalf("rejected: %v", Errors(diags))
	}
	var warns []Diagnostic
	for _, d := range Warnings(diags) {
		if d.Rule == RuleScoringExtension {
			warns = append(warns, d)
		}
	}
	if len(warns) != 1 || len(Warnings(diags)) != 1 {
		t.Fatalf("warnings %v, want exactly one %s", Warnings(diags), RuleScoringExtension)
	}
	if w := warns[0]; w.Path != "attack.x-scoring" || w.Pos.Line != 4 || w.Pos.Col != 3 {
		t.Errorf("warning at %s %d:%d, want attack.x-scoring at 4:3", w.Path, w.Pos.Line, w.Pos.Col)
	}
	out, err := Serialize(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "x-scoring:\n    max_tier: 3\n    impact: high\n") {
		t.Errorf("x-scoring not kept by normalize and serialize:\n%s", out)
	}
}

// A matched indicator's tier is carried into the verdict as max_tier.
func TestVerdictMaxTier(t *testing.T) {
	refs := []IndicatorRef{{"A-001-01", "ingested"}, {"A-001-02", "boundary_breach"}, {"A-001-03", "local_action"}}
	results := []IndicatorVerdict{{IndicatorID: "A-001-01", Result: Matched}, {IndicatorID: "A-001-02", Result: NotMatched},
		{IndicatorID: "A-001-03", Result: Matched}}
	v := ComputeVerdict("any", refs, results)
	if v.Result != Exploited || v.MaxTier != "local_action" {
		t.Errorf("got %s max_tier=%q, want exploited local_action (the unmatched boundary_breach does not count)", v.Result, v.MaxTier)
	}
	if v := ComputeVerdict("any", nil, nil); v.Result != Error {
		t.Errorf("no indicators: got %s, want error", v.Result)
	}
}
