package report

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/catalog"
	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/models"
	"github.com/agentwarden/warden/internal/conform/replay"
)

func run(t *testing.T) *Results {
	t.Helper()
	ms, err := models.All()
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := catalog.Default()
	res, err := Run(context.Background(), ms, cat, Options{Check: check.Options{MaxStates: 200_000}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func find(t *testing.T, res *Results, model, prop string) Finding {
	for _, f := range res.Findings {
		if f.Model == model && f.Property == prop {
			return f
		}
	}
	t.Fatalf("no finding %s/%s", model, prop)
	return Finding{}
}

func TestTriage(t *testing.T) {
	res := run(t)
	cases := []struct {
		model, prop, triage string
		adversary           bool
	}{
		// Forged card, used: every step is licensed and no clause on the path is ambiguous.
		{"a2a", "P2_card", SpecFail, true},
		// Answered before initialize: the lifecycle clause is a client SHOULD NOT; the server side is open.
		{"mcp", "SL_lifecycle", AmbiguityFail, false},
		// The 401 rule is a MUST: the property holds.
		{"mcp", "P7_fail_secure", Pass, false},
		// A call served without a token: "sanitize tool outputs" (TOOLS-05,
		// ambiguous) is cited by the call step, but identity does not depend
		// on it; authorization is OPTIONAL, so the specification permits it.
		{"mcp", "P1_identity", SpecFail, false},
		// Tainted context: depends on "sanitize", which is undefined.
		{"mcp", "P4_prompt_integrity", AmbiguityFail, true},
	}
	for _, c := range cases {
		f := find(t, res, c.model, c.prop)
		if f.Triage != c.triage || f.Adversary != c.adversary {
			t.Errorf("%s/%s: %s adversary=%v, want %s %v", c.model, c.prop, f.Triage, f.Adversary, c.triage, c.adversary)
		}
		if f.WardenResult != "holds" {
			t.Errorf("%s/%s behind warden: %s", c.model, c.prop, f.WardenResult)
		}
	}
	if f := find(t, res, "mcp", "SL_lifecycle"); len(f.AmbiguousRefs) == 0 || f.AmbiguousRefs[0] != "MCP-2025-06-18-LIFECYCLE-03" {
		t.Errorf("ambiguous refs %v", f.AmbiguousRefs)
	}
	if f := find(t, res, "mcp", "P4_prompt_integrity"); !slices.Equal(f.AmbiguousRefs, []string{"MCP-2025-06-18-TOOLS-05"}) {
		t.Errorf("P4 ambiguous refs %v, want only TOOLS-05", f.AmbiguousRefs)
	}
	// ANP's identity violation depends on its identity clause, not on the
	// negotiation clause of the handshake before it.
	if f := find(t, res, "anp", "P1_identity"); !slices.Equal(f.AmbiguousRefs, []string{"ANP-WP-IDENTITY-01"}) {
		t.Errorf("anp P1 ambiguous refs %v, want only ANP-WP-IDENTITY-01", f.AmbiguousRefs)
	}
}

// With the narrower ambiguity rule, replay decides MCP cells: a live
// server that serves the unauthenticated call makes P1 a BOTH-FAIL, and
// one that serves the planted directive cannot lift P4 out of
// AMBIGUITY-FAIL.
func TestReplayDecidesMCPCells(t *testing.T) {
	res := run(t)
	res.Against(&replay.Report{Target: "stdio:server", Protocol: "MCP", Mode: "live", Results: []replay.Result{
		{Model: "mcp", Property: "P1_identity", Outcome: replay.Reproduced},
		{Model: "mcp", Property: "P5_consent", Outcome: replay.Blocked},
		{Model: "mcp", Property: "P4_prompt_integrity", Outcome: replay.Reproduced}}}, nil)
	cells, err := res.Matrix()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"P1": BothFail, "P5": SpecFail, "P4": AmbiguityFail}
	for _, c := range cells {
		if w, ok := want[c.Principle]; ok && c.Protocol == "MCP" && c.Triage != w {
			t.Errorf("MCP × %s: %s (model %s), want %s", c.Principle, c.Triage, c.ModelTriage, w)
		}
	}
}

func TestMatrixShape(t *testing.T) {
	res := run(t)
	cells, err := res.Matrix()
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != len(catalog.Protocols)*len(ir.Principles) {
		t.Fatalf("%d cells", len(cells))
	}
	for _, c := range cells {
		if c.Principle == "CS" {
			for _, p := range c.Properties {
				if !strings.HasPrefix(p, "cs") {
					t.Errorf("%s CS cell built from %s", c.Protocol, p)
				}
			}
		}
		if c.Result == "violated" && c.Counterexample == "" {
			t.Errorf("%s/%s: violated without a counterexample link", c.Protocol, c.Principle)
		}
	}
	var md bytes.Buffer
	if err := res.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| MCP |") || !strings.Contains(md.String(), "cs5-federated | A2A + ANP | CS_DomainIsolation | holds") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

// The behind-warden numbers of a model check are the model's, and the
// matrix says so; a result behind the real gateway is printed only from a
// replay (--against).
func TestWardenColumnSaysModelled(t *testing.T) {
	res := run(t)
	var md bytes.Buffer
	if err := res.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	if strings.Contains(out, "→ warden = result behind the gateway") || !strings.Contains(out, "→ warden (modelled)") ||
		!strings.Contains(out, "Behind warden: not run") || strings.Contains(out, "Replay behind the gateway") {
		t.Errorf("markdown presents the modelled column as a result:\n%s", out)
	}
	// The headline count of what is still violated behind warden comes
	// only from a run: a model check prints none.
	if strings.Contains(out, "still violated") || strings.Contains(out, "of 66") {
		t.Errorf("a model check prints a behind-warden headline:\n%s", out)
	}
	var page bytes.Buffer
	if err := res.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), "still violated") || !strings.Contains(page.String(), "Behind warden: not run") {
		t.Errorf("the HTML summary prints a behind-warden headline without a run")
	}
	doc, err := res.JSONDocument()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.WardenResults, "modelled") {
		t.Errorf("warden_results = %q", doc.WardenResults)
	}
	res.Against(nil, &replay.Report{Target: "mock:mcp+warden", Protocol: "MCP", Mode: "mock",
		Notes: []string{"behind warden: require_token [echo]"}, Results: []replay.Result{
			{Model: "mcp", Property: "P1_identity", Outcome: replay.Blocked},
			{Model: "mcp", Property: "WF_wire", Outcome: replay.Inconclusive}},
		Gateway: &replay.GatewayEvidence{AuditRecords: 7, Rules: []string{"deny zero_trust/INV-1 ×1"}}})
	md.Reset()
	if err := res.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Replay behind the gateway (a run, mock:mcp+warden): 0 of 2 probes still reproduced; 0 reproduced, 1 blocked, 1 inconclusive",
		"Gateway configuration: require_token [echo].",
		"The gateway's audit log recorded 7 messages of the run (rules applied: deny zero_trust/INV-1 ×1)."} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	// A behind-warden run the gateway saw nothing of says so.
	res.Against(nil, &replay.Report{Target: "x+warden", Protocol: "MCP", Gateway: &replay.GatewayEvidence{}})
	if line := res.BehindLine(); !strings.Contains(line, "did not go through warden") {
		t.Errorf("a run without audit records: %s", line)
	}
}
