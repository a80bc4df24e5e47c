package ocsf

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/telemetry/seedtable"
	"github.com/google/go-cmp/cmp"
)

// TestControlsMatchTheSeed compares the compliance table with the seed's
// Compliance column, field by field, for every span type.
func TestControlsMatchTheSeed(t *testing.T) {
	seedtable.Need(t)
	spans := seedtable.Spans()
	if len(spans) != 8 {
		t.Fatalf("seed has %d spans", len(spans))
	}
	for _, s := range spans {
		want := map[string][]string{}
		add := func(fs []seedtable.Field) {
			for _, f := range fs {
				want[f.Name] = seedtable.ControlIDs(f.Compliance)
			}
		}
		add(s.Fields)
		for _, e := range s.Events {
			add(e.Fields)
		}
		got := map[string][]string{}
		table, ok := seedControls[s.Type]
		if !ok {
			t.Errorf("no compliance table for span %s", s.Type)
			continue
		}
		for f, cs := range table {
			ids := []string{}
			for _, c := range cs {
				ids = append(ids, c.ID)
			}
			got[f] = ids
		}
		for f := range want {
			if want[f] == nil {
				want[f] = []string{}
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: compliance table differs from the seed (-seed +code):\n%s", s.Type, d)
		}
	}
}

func TestControlFrameworks(t *testing.T) {
	for span, table := range seedControls {
		for field, cs := range table {
			for _, c := range cs {
				var want Framework
				switch {
				case strings.HasPrefix(c.ID, "LLM"):
					want = OWASPLLM
				case strings.HasPrefix(c.ID, "AML."):
					want = MITREATLAS
				case strings.HasPrefix(c.ID, "Art."):
					want = EUAIAct
				default:
					want = NISTAIRMF
				}
				if c.Framework != want {
					t.Errorf("%s %s: %s filed under %s, want %s", span, field, c.ID, c.Framework, want)
				}
			}
		}
	}
}

func TestControlsForFields(t *testing.T) {
	got := Controls(SpanToolInvoke, "aitf.mcp.tool.name", "aitf.mcp.tool.approved", "mcp.tool.approval.approver", "not.a.field")
	want := []Control{{EUAIAct, "Art.14"}, {MITREATLAS, "AML.T0048"}, {NISTAIRMF, "GOVERN-1.7"}, {OWASPLLM, "LLM06"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Controls (-want +got):\n%s", d)
	}
	if len(Controls(SpanToolInvoke)) < 10 {
		t.Error("Controls with no fields should return every control of the span")
	}
}

var t0 = time.Date(2026, 11, 21, 10, 28, 44, 0, time.UTC)

func toolCall() *Call {
	return &Call{
		SeedSpan:   SpanToolInvoke,
		SeedFields: []string{"aitf.mcp.tool.name", "aitf.mcp.tool.server", "aitf.mcp.tool.input"},
		Method:     "tools/call", RequestID: "3", Session: "sess-1", Actor: "agent-7", Client: "claude-desktop",
		Upstream: "filesystem", UpstreamVersion: "1.2.0", Transport: "stdio", ProtocolVersion: "2025-11-25",
		Tool: "read_file", Arguments: json.RawMessage(`{"path":"[redacted]"}`),
		Result:  json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`),
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7",
		Start: t0, End: t0.Add(12 * time.Millisecond),
		AuditSeq: 41, ParamsHash: "abc",
	}
}

func marshal(t *testing.T, e Event) (raw []byte, m map[string]any) {
	t.Helper()
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return raw, m
}

func TestStandardAPIActivity(t *testing.T) {
	evs := Builder{Product: Product{Name: "warden", Version: "0.1.0"}}.Events(toolCall())
	if len(evs) != 1 {
		t.Fatalf("%d events for an allowed call, want 1", len(evs))
	}
	raw, m := marshal(t, evs[0])
	if errs := Validate(raw); errs != nil {
		t.Fatalf("invalid OCSF: %v\n%s", errs, raw)
	}
	checks := map[string]any{
		"class_uid": 6003.0, "category_uid": 6.0, "activity_id": 99.0, "activity_name": "tools/call",
		"type_uid": 600399.0, "time": float64(t0.Add(12 * time.Millisecond).UnixMilli()), "severity_id": 1.0, "status_id": 1.0,
	}
	for k, v := range checks {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	var e struct {
		Metadata       Metadata
		Actor          Actor
		API            API
		MessageContext MessageContext `json:"message_context"`
		Trace          Trace
		Unmapped       map[string]any
	}
	json.Unmarshal(raw, &e)
	if e.Metadata.Version != "1.8.0" || !slices.Equal(e.Metadata.Profiles, []string{"ai_operation", "trace"}) || e.Metadata.Product.Name != "warden" {
		t.Errorf("metadata = %+v", e.Metadata)
	}
	if e.Actor.AppName != "claude-desktop" || e.Actor.User == nil || e.Actor.User.UID != "agent-7" {
		t.Errorf("actor = %+v", e.Actor)
	}
	if e.API.Operation != "tools/call" || e.API.Service.Name != "filesystem" || e.API.Request.UID != "3" ||
		string(e.API.Request.Data) != `{"path":"[redacted]"}` {
		t.Errorf("api = %+v", e.API)
	}
	if e.MessageContext.AIRoleID != AIRoleTool || e.MessageContext.UID != "sess-1" {
		t.Errorf("message_context = %+v", e.MessageContext)
	}
	if e.Trace.UID != "4bf92f3577b34da6a3ce929d0e0e4736" || e.Trace.Span.UID != "00f067aa0ba902b7" ||
		e.Trace.Span.EndTime-e.Trace.Span.StartTime != 12 {
		t.Errorf("trace = %+v", e.Trace)
	}
	if e.Unmapped["gen_ai.tool.name"] != "read_file" || e.Unmapped["mcp.server.transport"] != "stdio" {
		t.Errorf("unmapped = %v", e.Unmapped)
	}
	comp, _ := e.Unmapped["compliance"].(map[string]any)
	if !slices.Equal(toStrings(comp["owasp_llm"]), []string{"LLM01", "LLM06"}) ||
		!slices.Equal(toStrings(comp["mitre_atlas"]), []string{"AML.T0040", "AML.T0048", "AML.T0051"}) {
		t.Errorf("compliance = %v", comp)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestErrorAndDenial(t *testing.T) {
	c := toolCall()
	c.Result = nil
	c.ErrorCode, c.ErrorMessage = -32602, "bad params"
	raw, m := marshal(t, Builder{}.APIActivity(c))
	if m["status_id"] != 2.0 || m["status_code"] != "-32602" {
		t.Errorf("JSON-RPC error: status_id %v status_code %v, want 2 and -32602", m["status_id"], m["status_code"])
	}
	resp := m["api"].(map[string]any)["response"].(map[string]any)
	if resp["code"] != -32602.0 || resp["error"] != "-32602" || resp["error_message"] != "bad params" {
		t.Errorf("api.response = %v", resp)
	}
	if errs := Validate(raw); errs != nil {
		t.Error(errs)
	}

	c = toolCall()
	c.Denial = &Denial{Stage: "zero-trust", Rule: "params-hash", Invariant: "INV-3", Reason: "hash mismatch"}
	evs := Builder{}.Events(c)
	if len(evs) != 2 || evs[1].ClassUID() != ClassDetectionFinding {
		t.Fatalf("a denial gives %d events; want the activity and a Detection Finding", len(evs))
	}
	act, am := marshal(t, evs[0])
	fin, fm := marshal(t, evs[1])
	for _, raw := range [][]byte{act, fin} {
		if errs := Validate(raw); errs != nil {
			t.Errorf("invalid OCSF: %v\n%s", errs, raw)
		}
	}
	if am["status_id"] != 2.0 {
		t.Errorf("denied activity status_id = %v", am["status_id"])
	}
	if fm["type_uid"] != 200401.0 || fm["action_id"] != 2.0 || fm["disposition_id"] != 2.0 || fm["is_alert"] != true {
		t.Errorf("finding = %s", fin)
	}
	fi := fm["finding_info"].(map[string]any)
	if !strings.HasPrefix(fi["uid"].(string), "audit:41/") || !strings.Contains(fi["analytic"].(map[string]any)["name"].(string), "INV-3") {
		t.Errorf("finding_info = %v", fi)
	}
	if md := am["metadata"].(map[string]any); md["uid"] != "audit:41" || fm["metadata"].(map[string]any)["correlation_uid"] != "audit:41" {
		t.Errorf("finding is not linked to its activity: %v / %v", md, fm["metadata"])
	}
	// Tagged with what was refused (zero-trust: excessive agency), not with
	// every control of the call's fields (LLM01 for its input).
	if tags := fm["unmapped"].(map[string]any)["compliance"]; fmt.Sprint(tags) != "map[owasp_llm:[LLM06]]" {
		t.Errorf("finding's compliance tags = %v, want LLM06 only", tags)
	}
}

func TestAITFToolExecution(t *testing.T) {
	c := toolCall()
	c.Approval, c.Approver = "approved", "user@example.com"
	evs := Builder{Profile: ProfileAITF}.Events(c)
	raw, m := marshal(t, evs[0])
	if errs := Validate(raw); errs != nil {
		t.Errorf("base fields: %v", errs)
	}
	want := map[string]any{"class_uid": 7006001.0, "category_uid": 6.0, "type_uid": 700600101.0, "activity_id": 1.0,
		"tool_name": "read_file", "mcp_server": "filesystem", "mcp_transport": "stdio", "connection_id": "sess-1",
		"duration_ms": 12.0, "is_error": false, "approval_required": true, "approved": true, "approver": "user@example.com"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if _, ok := m["compliance_tags"].(map[string]any)["owasp_llm"]; !ok {
		t.Errorf("no compliance tags: %s", raw)
	}
}

// TestValidateFindsProblems makes sure the validator can fail.
func TestValidateFindsProblems(t *testing.T) {
	raw, _ := marshal(t, Builder{}.APIActivity(toolCall()))
	var m map[string]any
	json.Unmarshal(raw, &m)
	breaks := map[string]func(){
		"time as a string":   func() { m["time"] = "2026-11-21T10:28:44Z" },
		"time in seconds":    func() { m["time"] = 1795324124.0 },
		"wrong type_uid":     func() { m["type_uid"] = 600302.0 },
		"no actor":           func() { delete(m, "actor") },
		"empty actor":        func() { m["actor"] = map[string]any{} },
		"no api.operation":   func() { m["api"] = map[string]any{} },
		"no src_endpoint":    func() { delete(m, "src_endpoint") },
		"no metadata":        func() { delete(m, "metadata") },
		"99 without a name":  func() { delete(m, "activity_name") },
		"category mismatch":  func() { m["category_uid"] = 9.0 },
		"severity undefined": func() { m["severity_id"] = 42.0 },
	}
	for name, brk := range breaks {
		json.Unmarshal(raw, &m)
		brk()
		b, _ := json.Marshal(m)
		if Validate(b) == nil {
			t.Errorf("%s: Validate found nothing", name)
		}
	}
}

func TestAuditRecordsExportAsValidOCSF(t *testing.T) {
	recs := []audit.Record{
		{Seq: 1, Time: t0, Hash: "h1", Method: "tools/call", Tool: "read_file", Upstream: "fs", Decision: audit.Allow, Approver: "bob"},
		{Seq: 2, Time: t0, Hash: "h2", Method: "tools/call", Tool: "get_env", Upstream: "fs", Decision: audit.Deny,
			Stage: "tool-policy", Rule: `deny "get_*"`},
		{Seq: 3, Time: t0, Hash: "h3", Method: "resources/read", Upstream: "fs", Decision: audit.Error, Stage: "upstream", Rule: "timeout"},
	}
	wantEvents := []int{1, 2, 1}
	for i, r := range recs {
		evs := Builder{}.Events(AuditCall(&r))
		if len(evs) != wantEvents[i] {
			t.Errorf("record %d: %d events, want %d", r.Seq, len(evs), wantEvents[i])
		}
		for _, e := range evs {
			raw, m := marshal(t, e)
			if errs := Validate(raw); errs != nil {
				t.Errorf("record %d: %v", r.Seq, errs)
			}
			if m["unmapped"].(map[string]any)["warden.audit.hash"] != r.Hash {
				t.Errorf("record %d: event not linked to the chain: %s", r.Seq, raw)
			}
		}
		if _, m := marshal(t, evs[0]); (r.Decision == audit.Allow) != (m["status_id"] == 1.0) {
			t.Errorf("record %d (%s): status_id %v", r.Seq, r.Decision, m["status_id"])
		}
	}
}
