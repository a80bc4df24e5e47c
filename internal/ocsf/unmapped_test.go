package ocsf

import (
	"bytes"
	"encoding/json"
	"testing"
)

// unmappedBefore is the unmapped map the builders made before Unmapped was
// typed, kept here as it was, as the oracle of what the typed fields must
// encode: the members of c's API Activity (or, finding set, of its
// Detection Finding for f).
func unmappedBefore(c *Call, finding bool, f Finding) map[string]any {
	m := make(map[string]any, 16)
	m["mcp.method.name"] = method(c)
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set("mcp.session.id", c.Session)
	set("mcp.protocol.version", c.ProtocolVersion)
	set("mcp.server.transport", c.Transport)
	set("mcp.client.transport", c.ClientTransport)
	set("mcp.server.url", c.UpstreamURL)
	set("mcp.resource.uri", c.ResourceURI)
	set("gen_ai.tool.name", c.Tool)
	set("gen_ai.prompt.name", c.Prompt)
	set("warden.params_hash", c.ParamsHash)
	set("warden.jti", c.JTI)
	set("warden.audit.hash", c.AuditHash)
	set("mcp.tool.approval.status", c.Approval)
	set("mcp.tool.approval.approver", c.Approver)
	if c.AuditSeq != 0 {
		m["warden.audit.seq"] = c.AuditSeq
	}
	if d := c.Denial; d != nil {
		set("warden.stage", d.Stage)
		set("warden.rule", d.Rule)
		set("warden.invariant", d.Invariant)
	}
	if c.SeedSpan != "" {
		if tags := ComplianceTags(Controls(c.SeedSpan, c.SeedFields...)); tags != nil {
			m["compliance"] = tags
		}
	}
	if !finding {
		if c.RequestID == "" && c.Arguments != nil {
			m["mcp.params"] = c.Arguments
		}
		return m
	}
	if c.TraceID != "" {
		m["trace_id"] = c.TraceID
		if c.SpanID != "" {
			m["span_id"] = c.SpanID
		}
	}
	delete(m, "compliance")
	if tags := ComplianceTags(f.Controls); tags != nil {
		m["compliance"] = tags
	}
	return m
}

// TestTypedUnmappedIsTheMap: the unmapped object of every kind of call's
// API Activity and Detection Finding, as the events' encoder writes it, is
// byte for byte what encoding/json made of the map the builders filled
// before (keys sorted, HTML escaping off), read out of the event by
// encoding/json.
func TestTypedUnmappedIsTheMap(t *testing.T) {
	calls := everyCall()
	odd := toolCall()
	odd.Session, odd.Tool, odd.Prompt, odd.UpstreamURL = awkward, awkward, awkward, "http://h/p?<&>"
	odd.Denial = &Denial{Stage: awkward, Rule: awkward, Invariant: awkward}
	odd.Approval, odd.Approver, odd.JTI, odd.AuditHash, odd.AuditSeq = "denied", awkward, awkward, awkward, 1<<63+5
	odd.ProtocolVersion, odd.ClientTransport, odd.ResourceURI, odd.ParamsHash = "2025-06-18", "sse", awkward, "ab"
	calls["every member, awkward"] = odd
	note := toolCall()
	note.RequestID, note.Method, note.Arguments = "", "notifications/progress", json.RawMessage(`{ "progress" : 1 }`)
	calls["notification with params"] = note
	f := Finding{Title: "t", Rule: "r", Controls: []Control{{OWASPLLM, "LLM01"}, {MITREATLAS, "AML.T0051"}}}
	n := 0
	for name, c := range calls {
		for _, ev := range []struct {
			kind    string
			finding bool
			ev      Event
		}{{"activity", false, Builder{}.APIActivity(c)}, {"finding", true, Builder{}.Finding(c, f)},
			{"finding without controls", true, Builder{}.Finding(c, Finding{Title: "t", Rule: "r"})}} {
			ff := f
			if ev.kind == "finding without controls" {
				ff = Finding{}
			}
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(unmappedBefore(c, ev.finding, ff)); err != nil {
				t.Fatal(err)
			}
			line, err := AppendJSON(nil, ev.ev)
			if err != nil {
				t.Fatalf("%s %s: %v", name, ev.kind, err)
			}
			var got struct {
				Unmapped json.RawMessage `json:"unmapped"`
			}
			if err := json.Unmarshal(line, &got); err != nil {
				t.Fatalf("%s %s: %v", name, ev.kind, err)
			}
			if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got.Unmapped, w) {
				t.Errorf("%s %s: unmapped\n got %s\nwant %s", name, ev.kind, got.Unmapped, w)
			}
			n++
		}
	}
	if n < 20 {
		t.Errorf("only %d events compared", n)
	}
}

// TestOneCallsEventsAllocateLittle: building a tools/call's API Activity
// and encoding it allocate the event (one piece with the objects it
// points to, its unmapped object among them) and the slice of events,
// and its metadata.uid, nothing per member: with the unmapped map this
// replaced, and a buffer per raw value, it was 14.
func TestOneCallsEventsAllocateLittle(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	c := toolCall()
	b := Builder{Product: Product{Name: "warden", VendorName: "agentwarden"}}
	buf := make([]byte, 0, 16<<10)
	least := 1e9
	for range 5 { // the least of several: the garbage collector can add
		n := testing.AllocsPerRun(200, func() {
			for _, ev := range b.Events(c) {
				buf, _ = AppendJSON(buf[:0], ev)
			}
		})
		least = min(least, n)
	}
	if least > 4 { // 3 (the event, the slice, its metadata.uid), from 14
		t.Errorf("a call's OCSF events take %v allocations to build and encode, want at most 4", least)
	}
}

func BenchmarkOneCallsEvents(b *testing.B) {
	c := toolCall()
	bl := Builder{Product: Product{Name: "warden", VendorName: "agentwarden"}}
	buf := make([]byte, 0, 16<<10)
	b.ReportAllocs()
	for b.Loop() {
		for _, ev := range bl.Events(c) {
			buf, _ = AppendJSON(buf[:0], ev)
		}
	}
}
