//go:build integration

package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/report"
	"github.com/agentwarden/warden/internal/testenv"
)

// TestConformMatrixAgainstLiveServer: `warden conform matrix --against`
// server-everything over stdio. A violation that depends on no ambiguous
// clause is SPEC-FAIL in the model, and the live server turns it into
// BOTH-FAIL when it shows it: P5 (echo runs with no question to the user)
// and P1 (started without the variable named as its credential, it still
// serves). Behind the real gateway every probe is blocked, and the
// summary counts that from the run, with the configuration it ran.
func TestConformMatrixAgainstLiveServer(t *testing.T) {
	node := testenv.Node22(t)
	js := testenv.EverythingServer(t)
	if target, err := filepath.EvalSymlinks(js); err == nil {
		js = target
	}
	t.Setenv("SECRET_TOKEN", "conform-test-credential")
	code, out, errs := runConformTest(t, "matrix", "--format", "json", "--profile", "2025-06-18",
		"--against", "stdio:"+node+" "+js+" stdio", "--credential-env", "SECRET_TOKEN")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var doc report.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ model, triage string }{
		"P1": {report.SpecFail, report.BothFail},
		"P5": {report.SpecFail, report.BothFail},
		"P4": {report.AmbiguityFail, report.AmbiguityFail}, // "sanitize" is undefined whatever the server does
	}
	for _, c := range doc.Cells {
		w, ok := want[c.Principle]
		if c.Protocol != "MCP" || !ok {
			continue
		}
		delete(want, c.Principle)
		if c.ModelTriage != w.model || c.Triage != w.triage || c.Implementation == nil || c.Implementation.Mode != "live" {
			t.Errorf("MCP × %s: model %s, with replay %s (implementation %+v); want %s then %s",
				c.Principle, c.ModelTriage, c.Triage, c.Implementation, w.model, w.triage)
		}
		if c.BehindWarden == nil || c.BehindWarden.Outcome != "blocked" {
			t.Errorf("MCP × %s behind the gateway: %+v, want blocked", c.Principle, c.BehindWarden)
		}
	}
	if len(want) > 0 {
		t.Errorf("cells not found: %v", want)
	}
	if s := doc.Summary.BehindWarden; !strings.Contains(s, "a run") || !strings.Contains(s, "0 of 5 probes still reproduced") ||
		!strings.Contains(s, "Gateway configuration: require_token") {
		t.Errorf("summary behind warden: %q", s)
	}
}
