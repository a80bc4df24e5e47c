package ocsf_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/ocsf"
	"github.com/agentwarden/warden/internal/secproc"
)

// deniedCall is a tools/call whose span carried its input (LLM01 in the
// seed's column) and output, refused by stage/rule.
func deniedCall(stage, rule string) *ocsf.Call {
	return &ocsf.Call{SeedSpan: ocsf.SpanToolInvoke,
		SeedFields: []string{"aitf.mcp.tool.name", "aitf.mcp.tool.server", "aitf.mcp.tool.input", "mcp.tool.input.content"},
		Method:     "tools/call", RequestID: "1", Upstream: "files", Tool: "get_env",
		Denial: &ocsf.Denial{Stage: stage, Rule: rule, Reason: "refused"}}
}

// findingTags returns the compliance tags and ATLAS technique ids of the
// Detection Finding of c's denial, as a SIEM reads them.
func findingTags(t *testing.T, c *ocsf.Call) (owasp, atlas []string) {
	t.Helper()
	raw, err := json.Marshal(ocsf.Builder{}.DenialFinding(c))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Unmapped struct {
			Compliance map[string][]string `json:"compliance"`
		} `json:"unmapped"`
		Attacks []struct {
			Technique struct {
				UID string `json:"uid"`
			} `json:"technique"`
		} `json:"attacks"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.Attacks {
		atlas = append(atlas, a.Technique.UID)
	}
	return f.Unmapped.Compliance["owasp_llm"], atlas
}

// A refusal's Detection Finding is tagged with what was refused: a
// tool-policy refusal is excessive agency, not prompt injection, even
// though the call's input field is tagged LLM01 by the seed.
func TestDenialFindingTagsWhatWasRefused(t *testing.T) {
	for _, tc := range []struct {
		stage, rule string
		owasp       []string
	}{
		{"tool-policy", "deny-list", []string{"LLM06"}},
		{"zero-trust", "token-missing", []string{"LLM06"}},
		{"pin", "changed", []string{"LLM03"}},
		{"wire", "tool-name", nil},
		{"security", "prompt_injection/override", []string{"LLM01"}},
	} {
		owasp, atlas := findingTags(t, deniedCall(tc.stage, tc.rule))
		if !slices.Equal(owasp, tc.owasp) {
			t.Errorf("%s/%s: owasp_llm %v, want %v", tc.stage, tc.rule, owasp, tc.owasp)
		}
		if tc.stage != "security" && slices.Contains(atlas, "AML.T0051") {
			t.Errorf("%s/%s: the finding names ATLAS AML.T0051 (LLM Prompt Injection)", tc.stage, tc.rule)
		}
	}
}

// A security refusal carries the controls of its category, as the security
// processor's own finding does.
func TestDenialControlsOfSecurityMatchTheFindings(t *testing.T) {
	for _, cat := range []secproc.Category{secproc.FileAccess, secproc.CommandInjection, secproc.Exfiltration,
		secproc.PrivilegeEscalation, secproc.InjectedInstructions} {
		want := secproc.Finding{Category: cat, Rule: string(cat) + "/x"}.OCSFFinding("").Controls
		got := ocsf.DenialControls("security", string(cat)+"/x")
		slices.SortFunc(want, compareControls)
		slices.SortFunc(got, compareControls)
		if !slices.Equal(got, want) {
			t.Errorf("%s: DenialControls %v, the processor's finding %v", cat, got, want)
		}
	}
}

func compareControls(a, b ocsf.Control) int {
	if a.Framework != b.Framework {
		if a.Framework < b.Framework {
			return -1
		}
		return 1
	}
	if a.ID < b.ID {
		return -1
	}
	if a.ID > b.ID {
		return 1
	}
	return 0
}

// An exported audit record of a denied approval says denied, with its
// approver, not approved.
func TestAuditCallOfADeniedApproval(t *testing.T) {
	for _, tc := range []struct {
		decision audit.Decision
		rule     string
		want     string
	}{
		{audit.Allow, "", "approved"},
		{audit.Deny, "approval-denied", "denied"},
	} {
		c := ocsf.AuditCall(&audit.Record{Seq: 3, Method: "tools/call", RequestID: "1", Tool: "transfer_funds",
			Decision: tc.decision, Stage: "zero-trust", Rule: tc.rule, Approver: "bob@example.com"})
		if c.Approval != tc.want || c.Approver != "bob@example.com" {
			t.Errorf("%s %s: approval %q by %q, want %q by bob@example.com", tc.decision, tc.rule, c.Approval, c.Approver, tc.want)
		}
	}
}
