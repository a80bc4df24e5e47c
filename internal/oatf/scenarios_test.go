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
// is the documented extension: it must warn, never fail.
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
	tiered := 0
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
	if tiered == 0 {
		t.Error("no scenario reported the tier extension; the library uses it")
	}
	t.Logf("%d scenarios load and validate; %d use the tier extension", len(files), tiered)
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
