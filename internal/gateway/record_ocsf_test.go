package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/ocsf"
	"github.com/agentwarden/warden/internal/ocsf/ocsfschema/ocsfschematest"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/telemetry"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

type eventSink struct {
	mu  sync.Mutex
	out []map[string]any
	raw [][]byte
}

func (s *eventSink) Emit(e ocsf.Event) {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	s.mu.Lock()
	s.out, s.raw = append(s.out, m), append(s.raw, b)
	s.mu.Unlock()
}

// TestLiveOCSFEventsAreValid records what the relay records (an allowed
// call with a string id, its answer, a refusal with a finding, a
// notification, a session's end) and validates each OCSF event against the
// official schema, in both profiles. The events name the upstream's own
// transport (stdio here), not the client's, and the id without quotes.
func TestLiveOCSFEventsAreValid(t *testing.T) {
	s := ocsfschematest.Schema(t, ocsfschematest.V180)
	decode := func(raw string) *jsonrpc.Message {
		m, err := jsonrpc.Decode([]byte(raw), jsonrpc.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, profile := range []ocsf.Profile{ocsf.ProfileStandard, ocsf.ProfileAITF} {
		sink := &eventSink{}
		rs := &Records{
			Spans: telemetry.NewRecorder(telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(),
				OCSFSink: sink, OCSFProfile: profile, Product: ocsf.Product{Name: "warden", VendorName: "agentwarden"}}),
			Transport:  telemetry.TransportStreamableHTTP,
			Transports: map[string]string{"fs": telemetry.TransportStdio},
		}
		ctx := context.Background()
		req := decode(`{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"read_file","arguments":{"path":"/tmp/x"}}}`)
		d := &Decision{Upstream: "fs", Session: "s1", Kind: jsonrpc.KindRequest, Method: "tools/call", Tool: "read_file",
			ID: req.ID, Direction: "client", Msg: req, Arguments: []byte(`{"path":"/tmp/x"}`)}
		if err := rs.Record(ctx, d); err != nil {
			t.Fatal(err)
		}
		ans := decode(`{"jsonrpc":"2.0","id":"call-1","result":{"content":[{"type":"text","text":"hello"}]}}`)
		if err := rs.Record(ctx, &Decision{Upstream: "fs", Session: "s1", Kind: jsonrpc.KindResponse, Method: "tools/call",
			Tool: "read_file", ID: ans.ID, Direction: "upstream", Msg: ans, Open: d.Open}); err != nil {
			t.Fatal(err)
		}
		bad := decode(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_env","arguments":{}}}`)
		if err := rs.Record(ctx, &Decision{Upstream: "fs", Session: "s1", Kind: jsonrpc.KindRequest, Method: "tools/call",
			Tool: "get_env", ID: bad.ID, Direction: "client", Msg: bad, Arguments: []byte(`{}`),
			Denial:   &Denial{Stage: "tool-policy", Rule: `deny "get_*"`, Reason: "get_env is denied"},
			Findings: []secproc.Finding{{Category: secproc.InjectedInstructions, Rule: "prompt_injection/ignore", Severity: secproc.High, Message: "instructions in the arguments", Path: "arguments"}}}); err != nil {
			t.Fatal(err)
		}
		note := decode(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
		if err := rs.Record(ctx, &Decision{Upstream: "fs", Session: "s1", Kind: jsonrpc.KindNotification,
			Method: "notifications/cancelled", Direction: "client", Msg: note}); err != nil {
			t.Fatal(err)
		}
		rs.SessionEnded(ctx, "fs", "s1")

		if len(sink.raw) < 5 {
			t.Fatalf("%s: %d OCSF events, want the call, the refusal, its findings, the notification and the disconnect", profile, len(sink.raw))
		}
		for _, raw := range sink.raw {
			ocsfschematest.Check(t, s, raw)
		}
		first := sink.out[0]
		switch profile {
		case ocsf.ProfileStandard:
			u := first["unmapped"].(map[string]any)
			if u["mcp.server.transport"] != "stdio" || u["mcp.client.transport"] != "streamable_http" {
				t.Errorf("transports: server %v, client %v; want stdio, streamable_http", u["mcp.server.transport"], u["mcp.client.transport"])
			}
			if uid := first["api"].(map[string]any)["request"].(map[string]any)["uid"]; uid != "call-1" {
				t.Errorf("api.request.uid %q, want call-1", uid)
			}
		case ocsf.ProfileAITF:
			if first["mcp_transport"] != "stdio" {
				t.Errorf("mcp_transport %v, want stdio", first["mcp_transport"])
			}
		}
	}
}
