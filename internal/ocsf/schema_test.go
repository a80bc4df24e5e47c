package ocsf

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/ocsf/ocsfschema/ocsfschematest"
)

// everyCall is one Call of each kind the gateway records: allowed, failed,
// refused, notifications, a session's end, requests from the upstream,
// calls before a session exists, string and numeric ids, audit records.
func everyCall() map[string]*Call {
	calls := map[string]*Call{"tools/call allowed": toolCall()}
	add := func(name string, f func(c *Call)) {
		c := toolCall()
		f(c)
		calls[name] = c
	}
	add("tools/call JSON-RPC error", func(c *Call) { c.Result, c.ErrorCode, c.ErrorMessage = nil, -32602, "bad params" })
	add("tools/call tool error", func(c *Call) { c.ToolError, c.ErrorMessage = true, "no such file" })
	add("tools/call denied", func(c *Call) {
		c.Result = nil
		c.Denial = &Denial{Stage: "zero-trust", Rule: "params-hash", Invariant: "INV-3", Reason: "hash mismatch"}
	})
	add("tools/call approved", func(c *Call) { c.Approval, c.Approver = "approved", "alice@example.com" })
	add("tools/call approval denied", func(c *Call) {
		c.Approval, c.Approver = "denied", "alice@example.com"
		c.Denial = &Denial{Stage: "approval", Rule: "human", Reason: "denied by alice@example.com"}
	})
	add("string request id", func(c *Call) { c.RequestID = `"req-\"7\""` })
	add("no trace", func(c *Call) { c.TraceID, c.SpanID = "", "" })
	add("no session, no upstream, no client", func(c *Call) {
		c.Session, c.Upstream, c.UpstreamVersion, c.Client, c.Actor = "", "", "", "", ""
	})
	add("initialize", func(c *Call) {
		c.SeedSpan, c.SeedFields, c.Method, c.Tool, c.Arguments, c.Result = SpanServerConnect, nil, "initialize", "", nil, json.RawMessage(`{}`)
	})
	add("tools/list", func(c *Call) {
		c.SeedSpan, c.SeedFields, c.Method, c.Tool, c.Arguments, c.Result = SpanToolDiscover, nil, "tools/list", "", nil, nil
	})
	add("resources/read", func(c *Call) {
		c.SeedSpan, c.SeedFields, c.Method, c.Tool, c.ResourceURI = SpanResourceRead, nil, "resources/read", "", "file:///etc/hosts"
	})
	add("prompts/get", func(c *Call) {
		c.SeedSpan, c.SeedFields, c.Method, c.Tool, c.Prompt = SpanPromptGet, nil, "prompts/get", "", "summarize"
	})
	add("sampling from the upstream", func(c *Call) {
		c.SeedSpan, c.SeedFields, c.Method, c.Tool = SpanSamplingRequest, nil, "sampling/createMessage", ""
	})
	add("notification", func(c *Call) {
		c.SeedSpan, c.SeedFields, c.Method, c.RequestID, c.Tool, c.Arguments, c.Result = "", nil, "notifications/progress", "", "", nil, nil
		c.End = c.Start
	})
	add("disconnect", func(c *Call) {
		c.SeedSpan, c.SeedFields, c.Method, c.RequestID, c.Tool, c.Arguments, c.Result = SpanServerDisconnect, nil, "mcp.server.disconnect", "", "", nil, nil
		c.AuditSeq = 0
	})
	add("unknown method, no span times", func(c *Call) {
		c.SeedSpan, c.SeedFields, c.Method, c.Tool = "", nil, "x/custom", ""
		c.Start, c.End = time.Time{}, time.Time{}
	})
	for _, r := range []audit.Record{
		{Seq: 1, Time: t0, Hash: "h1", RequestID: "1", Method: "tools/call", Tool: "read_file", Upstream: "fs", Decision: audit.Allow, Approver: "bob"},
		{Seq: 2, Time: t0, Hash: "h2", RequestID: `"two"`, Method: "tools/call", Tool: "get_env", Upstream: "fs", Decision: audit.Deny,
			Stage: "tool-policy", Rule: `deny "get_*"`, Reason: "listed"},
		{Seq: 3, Time: t0, Hash: "h3", RequestID: "3", Method: "resources/read", Upstream: "fs", Decision: audit.Error, Stage: "upstream", Rule: "timeout"},
		{Seq: 4, Time: t0, Hash: "h4", Method: "notifications/initialized", Upstream: "fs", Decision: audit.Allow},
		{Seq: 5, Time: t0, Hash: "h5", Decision: audit.Error, Stage: "audit", Rule: "lost", Direction: "warden", Reason: "records are missing"},
	} {
		calls["audit record "+r.Method+" "+string(r.Decision)] = AuditCall(&r)
	}
	return calls
}

// TestEveryEventValidatesAgainstOCSF builds the events of every kind of
// call with each profile and validates them against the official OCSF
// 1.8.0 schema (with warden's extension for the AITF Tool Execution class),
// and the findings the security processor reports, blocked or not.
func TestEveryEventValidatesAgainstOCSF(t *testing.T) {
	s := ocsfschematest.Schema(t, ocsfschematest.V180)
	for _, profile := range []Profile{ProfileStandard, ProfileAITF} {
		b := Builder{Profile: profile, Product: Product{Name: "warden", VendorName: "agentwarden", Version: "0.1.0"}}
		for name, c := range everyCall() {
			t.Run(string(profile)+"/"+name, func(t *testing.T) {
				evs := b.Events(c)
				evs = append(evs, b.Finding(c, Finding{Title: "secret in output", Rule: "security: secrets", Severity: SeverityHigh,
					Controls: []Control{{OWASPLLM, "LLM02"}, {MITREATLAS, "AML.T0051"}}, RiskScore: 80}))
				evs = append(evs, b.Finding(c, Finding{Title: "injection", Rule: "security: injection", Blocked: true}))
				evs = append(evs, b.Finding(c, Finding{Title: "injected instructions", Rule: "security: override", Quarantined: true}))
				for _, e := range evs {
					raw, err := json.Marshal(e)
					if err != nil {
						t.Fatal(err)
					}
					ocsfschematest.Check(t, s, raw)
				}
			})
		}
	}
}

// TestWhatTheSchemaCannotSee: the fixes the schema alone does not force.
func TestWhatTheSchemaCannotSee(t *testing.T) {
	// A quarantined answer was relayed changed, not allowed as it was:
	// the schema's own captions for disposition_id 3 and action_id 4.
	_, m := marshal(t, Builder{}.Finding(toolCall(), Finding{Title: "injected instructions", Rule: "security: override", Quarantined: true}))
	if m["disposition_id"] != 3.0 || m["disposition"] != "Quarantined" || m["action_id"] != 4.0 || m["action"] != "Modified" {
		t.Errorf("a quarantine's finding: disposition %v %v, action %v %v; want 3 Quarantined, 4 Modified",
			m["disposition_id"], m["disposition"], m["action_id"], m["action"])
	}
	c := toolCall()
	c.RequestID = `"req-7"`
	_, m = marshal(t, Builder{}.APIActivity(c))
	if uid := m["api"].(map[string]any)["request"].(map[string]any)["uid"]; uid != "req-7" {
		t.Errorf("string id %s recorded as api.request.uid %q, want req-7", c.RequestID, uid)
	}
	c.Denial = &Denial{Stage: "tool-policy", Rule: "deny", Reason: "listed"}
	_, m = marshal(t, Builder{Profile: ProfileAITF}.ToolExecution(c))
	if m["is_error"] != true || m["status_id"] != 2.0 {
		t.Errorf("a refused call: is_error %v, status_id %v; want true, 2", m["is_error"], m["status_id"])
	}
	_, m = marshal(t, Builder{}.DenialFinding(c))
	if u := m["unmapped"].(map[string]any); u["trace_id"] != c.TraceID || u["span_id"] != c.SpanID {
		t.Errorf("the finding lost its trace ids: unmapped %v", u)
	}
	n := toolCall()
	n.Method, n.RequestID, n.Arguments = "notifications/cancelled", "", json.RawMessage(`{"requestId":3}`)
	_, m = marshal(t, Builder{}.APIActivity(n))
	if _, has := m["api"].(map[string]any)["request"]; has {
		t.Errorf("a notification has an api.request: %v", m["api"])
	}
	if string(must(json.Marshal(m["unmapped"].(map[string]any)["mcp.params"]))) != `{"requestId":3}` {
		t.Errorf("a notification's params are lost: %v", m["unmapped"])
	}
	r := audit.Record{Seq: 9, Time: t0, Hash: "h9", Decision: audit.Error, Stage: "audit", Rule: "lost", Direction: "warden"}
	_, m = marshal(t, Builder{}.APIActivity(AuditCall(&r)))
	if m["activity_name"] != "audit.lost" || m["api"].(map[string]any)["operation"] != "audit.lost" {
		t.Errorf("a record without a method: activity_name %v, api %v", m["activity_name"], m["api"])
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestEveryEventValidatesAgainstOCSF19: the same events with
// metadata.version 1.9.0-dev are valid OCSF 1.9.0-dev.
func TestEveryEventValidatesAgainstOCSF19(t *testing.T) {
	s := ocsfschematest.Schema(t, ocsfschematest.V190Dev)
	for _, profile := range []Profile{ProfileStandard, ProfileAITF} {
		b := Builder{Profile: profile, Product: Product{Name: "warden"}, Version: SchemaVersionIntegrity}
		for name, c := range everyCall() {
			for _, e := range b.Events(c) {
				raw, _ := json.Marshal(e)
				if ocsfschematest.Check(t, s, raw) > 0 {
					t.Logf("%s/%s", profile, name)
				}
			}
		}
	}
}

// TestAuditChainAttestation: the activity event of each audit record
// carries the record's place in the chain through OCSF 1.9's
// record_integrity profile, valid against 1.9.0-dev, and chains to the
// previous event.
func TestAuditChainAttestation(t *testing.T) {
	s := ocsfschematest.Schema(t, ocsfschematest.V190Dev)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.OpenBackend(audit.KindJSONL, path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := audit.New(ctx, w, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []audit.Record{
		{Method: "initialize", RequestID: "0", Upstream: "fs", Decision: audit.Allow, Direction: "client"},
		{Method: "tools/call", RequestID: `"a"`, Tool: "get_env", Upstream: "fs", Decision: audit.Deny, Stage: "tool-policy", Rule: "deny", Direction: "client"},
		{Method: "tools/call", RequestID: "2", Tool: "read_file", Upstream: "fs", Decision: audit.Allow, Direction: "client"},
	} {
		if _, err := l.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// … read back through the backend, as the export does.
	rb, err := audit.OpenBackend(audit.KindJSONL, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	var recs []audit.Record
	if _, err := rb.Scan(ctx, func(r audit.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records read back, want 3", len(recs))
	}
	b := Builder{Product: Product{Name: "warden"}, Version: SchemaVersionIntegrity}
	ch := &Chain{UID: "warden-audit:" + recs[0].Hash}
	var attested []map[string]any
	for i := range recs {
		n := 0
		for _, ev := range b.Events(AuditCall(&recs[i])) {
			if ch.Attest(ev, &recs[i]) {
				n++
			}
			raw, m := marshal(t, ev)
			ocsfschematest.Check(t, s, raw)
			if _, ok := m["attestation_list"]; ok {
				attested = append(attested, m)
			}
		}
		if n != 1 {
			t.Errorf("record %d: %d events attested, want 1", recs[i].Seq, n)
		}
	}
	for i, m := range attested {
		a := m["attestation_list"].([]any)[0].(map[string]any)
		md := m["metadata"].(map[string]any)
		if a["fingerprint"].(map[string]any)["value"] != recs[i].Hash || md["sequence"] != float64(recs[i].Seq) ||
			md["uid"] != a["uid"] || a["chain_uid"] != ch.UID {
			t.Errorf("event %d: attestation %v, metadata %v; want record %d's hash and seq", i, a, md, recs[i].Seq)
		}
		prev, has := a["prev_event"].(map[string]any)
		if i == 0 {
			if has {
				t.Errorf("the first record has a prev_event: %v", prev)
			}
			continue
		}
		want := attested[i-1]["attestation_list"].([]any)[0].(map[string]any)
		if !has || prev["uid"] != want["uid"] || prev["fingerprint"].(map[string]any)["value"] != want["fingerprint"].(map[string]any)["value"] ||
			prev["type_uid"] != attested[i-1]["type_uid"] {
			t.Errorf("event %d: prev_event %v does not name event %d (%v)", i, prev, i-1, want)
		}
	}
}
