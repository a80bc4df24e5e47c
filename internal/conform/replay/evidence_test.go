package replay_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/cli"
)

// TestBehindWardenEvidence: a --warden report shows that its run went
// through the gateway: the gateway's audit log has records, and it lists
// the stage and rule of what the gateway refused or quarantined, and each MCP probe blocked behind warden was
// refused by a gateway stage with an explicit code (its evidence names the
// stage), not by the target. The plain report has no such evidence.
func TestBehindWardenEvidence(t *testing.T) {
	for _, target := range []string{"mock:mcp-http", "mock:a2a", "mock:agui"} {
		t.Run(target, func(t *testing.T) {
			code, out, errs := runReplay(t, "--target", target, "--warden", "--format", "json", "--timeout", "3s")
			if code != cli.ExitFindings {
				t.Fatalf("exit %d, want %d (the plain mock reproduces)\n%s%s", code, cli.ExitFindings, out, errs)
			}
			var doc struct {
				Reports []struct {
					BehindWarden bool `json:"behind_warden"`
					Notes        []string
					Gateway      *struct {
						AuditRecords int `json:"audit_records"`
						Rules        []string
					}
					Results []struct{ Property, Outcome, Evidence string }
				}
			}
			if err := json.NewDecoder(strings.NewReader(out)).Decode(&doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Reports) != 2 || !doc.Reports[1].BehindWarden {
				t.Fatalf("want a plain and a behind-warden report:\n%s", out)
			}
			if doc.Reports[0].Gateway != nil {
				t.Errorf("the plain report claims gateway evidence: %+v", doc.Reports[0].Gateway)
			}
			g := doc.Reports[1].Gateway
			if g == nil || g.AuditRecords == 0 || len(g.Rules) == 0 {
				t.Fatalf("behind warden: no audit evidence that the run went through the gateway: %+v", g)
			}
			if !strings.Contains(strings.Join(doc.Reports[1].Notes, "\n"), "gateway audit log:") {
				t.Errorf("behind warden: no audit note: %v", doc.Reports[1].Notes)
			}
			blocked := 0
			for _, r := range doc.Reports[1].Results {
				if r.Outcome != "blocked" {
					continue
				}
				blocked++
				if target == "mock:mcp-http" && r.Property != "P4_prompt_integrity" && !strings.Contains(r.Evidence, "[stage ") {
					t.Errorf("%s blocked behind warden without a gateway stage in its evidence: %s", r.Property, r.Evidence)
				}
			}
			if blocked == 0 {
				t.Errorf("nothing blocked behind warden: %+v", doc.Reports[1].Results)
			}
		})
	}
}
