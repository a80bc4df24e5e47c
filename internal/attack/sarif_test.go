package attack

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentwarden/warden/internal/oatf"
)

// TestSARIFLocationsUseABase: a matched indicator's location is relative
// to %SRCROOT% (which originalUriBaseIds resolves to the base folder), as
// code scanning needs to map it onto the checkout, whether the document
// was given relative or absolute; a document outside the base gets an
// absolute file URI and no base.
func TestSARIFLocationsUseABase(t *testing.T) {
	base := t.TempDir()
	raw, diags := oatf.Parse("x.yaml", []byte("oatf: \"0.1\"\nattack:\n  id: TEST-060\n  execution:\n    mode: ag_ui_client\n"+
		"    state: {run_agent_input: {}}\n  indicators:\n    - target: delta\n      pattern: {contains: x}\n"))
	doc, diags := oatf.ValidateOptions{}.LoadDocument(raw, diags)
	if doc == nil {
		t.Fatal(diags)
	}
	outside := filepath.Join(t.TempDir(), "my docs", "z.yaml")
	files := []string{filepath.Join(base, "attacks", "a.yaml"), filepath.Join(base, "attacks", "b c.yaml"), outside}
	var outcomes []Outcome
	for _, f := range files {
		res := &Result{Document: doc, Verdict: oatf.Verdict{Result: oatf.Exploited}, Indicators: []IndicatorResult{{
			IndicatorVerdict: oatf.IndicatorVerdict{IndicatorID: "TEST-060-01", Result: oatf.Matched}, Pos: oatf.Pos{Line: 8, Col: 7}}}}
		outcomes = append(outcomes, Outcome{File: f, ID: "TEST-060", Result: res})
	}
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, outcomes, base); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Runs []struct {
			Bases   map[string]struct{ URI string } `json:"originalUriBaseIds"`
			Results []struct {
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI       string `json:"uri"`
							URIBaseID string `json:"uriBaseId"`
						} `json:"artifactLocation"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	if got, want := run.Bases["%SRCROOT%"].URI, "file://"+filepath.ToSlash(base)+"/"; got != want {
		t.Errorf("originalUriBaseIds %%SRCROOT%% = %q, want %q", got, want)
	}
	want := []struct{ uri, base string }{
		{"attacks/a.yaml", "%SRCROOT%"},
		{"attacks/b%20c.yaml", "%SRCROOT%"},
		{"file://" + filepath.ToSlash(filepath.Dir(filepath.Dir(outside))) + "/my%20docs/z.yaml", ""},
	}
	if len(run.Results) != len(want) {
		t.Fatalf("%d results, want %d", len(run.Results), len(want))
	}
	for i, w := range want {
		got := run.Results[i].Locations[0].PhysicalLocation.ArtifactLocation
		if got.URI != w.uri || got.URIBaseID != w.base {
			t.Errorf("%s: location %+v, want uri %q, uriBaseId %q", files[i], got, w.uri, w.base)
		}
	}
}
