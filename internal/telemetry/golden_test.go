package telemetry

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/ocsf"
	"github.com/agentwarden/warden/internal/telemetry/seedtable"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// record runs op through a Recorder with opts and returns the one span.
func record(t *testing.T, opts Options, op *Operation) sdktrace.ReadOnlySpan {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	opts.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	NewRecorder(opts).Record(context.Background(), op)
	spans := sr.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1", len(spans))
	}
	return spans[0]
}

func attrMap(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := make(map[string]attribute.Value, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

var start = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// golden is one span type's fixture: an operation, and the value every
// seed field must have on the span or its events. The field names and
// requirement levels come from the seed (seedtable); want must give a
// value for every Required and Recommended one.
type golden struct {
	op   *Operation
	want map[string]any // seed field → value (string, int64, float64, bool, []string)
}

var goldens = map[string]golden{
	"aitf.mcp.server.connect": {
		op: &Operation{Method: "initialize", RequestID: "0", Upstream: "filesystem", Transport: TransportStreamableHTTP,
			ServerTransport: TransportStdio, ConnectionID: "conn-fs-abc123", UpstreamURL: "https://mcp.example.com/mcp",
			Params: []byte(`{"protocolVersion":"2025-03-26","capabilities":{"sampling":{},"roots":{"listChanged":true}},"clientInfo":{"name":"claude","version":"1"}}`),
			Result: []byte(`{"protocolVersion":"2025-03-26","capabilities":{"tools":{},"resources":{"subscribe":true}},"serverInfo":{"name":"fs","version":"1.4.2"}}`)},
		want: map[string]any{
			"aitf.mcp.server.name": "filesystem", "aitf.mcp.server.transport": "stdio", // the upstream's leg, not the client's
			"aitf.mcp.connection.id": "conn-fs-abc123", "aitf.mcp.server.version": "1.4.2",
			"aitf.mcp.server.url": "https://mcp.example.com/mcp", "aitf.mcp.protocol.version": "2025-03-26",
			"mcp.capabilities.tools": true, "mcp.capabilities.resources": true, "mcp.capabilities.prompts": false,
			"mcp.capabilities.sampling": true, "mcp.capabilities.roots": true,
		},
	},
	"aitf.mcp.server.disconnect": {
		op:   &Operation{Span: SpanServerDisconnect, Upstream: "filesystem", ConnectionID: "conn-fs-abc123"},
		want: map[string]any{"aitf.mcp.server.name": "filesystem", "aitf.mcp.connection.id": "conn-fs-abc123"},
	},
	"aitf.mcp.tool.discover": {
		op: &Operation{Method: "tools/list", RequestID: "1", Upstream: "filesystem", Session: "conn-fs-abc123",
			Result: []byte(`{"tools":[{"name":"read_file","inputSchema":{}},{"name":"write_file"},{"name":"list_dir"},{"name":"search"},{"name":"move_file"}]}`)},
		want: map[string]any{"aitf.mcp.server.name": "filesystem", "aitf.mcp.tool.count": int64(5),
			"aitf.mcp.tool.names":    []string{"read_file", "write_file", "list_dir", "search", "move_file"},
			"aitf.mcp.connection.id": "conn-fs-abc123"},
	},
	"aitf.mcp.tool.invoke": {
		op: &Operation{Method: "tools/call", RequestID: "2", Upstream: "filesystem", Session: "conn-fs-abc123",
			Transport: TransportStdio, ServerTransport: TransportStreamableHTTP, Tool: "write_file",
			Params:    []byte(`{"name":"write_file","arguments":{"path":"/data/output.txt"}}`),
			Arguments: []byte(`{"path":"/data/output.txt"}`),
			Result:    []byte(`{"content":[{"type":"text","text":"File written successfully"}]}`),
			Approval:  "approved", Approver: "user@example.com",
			Start: start, End: start.Add(12500 * time.Microsecond)},
		want: map[string]any{
			"aitf.mcp.tool.name": "write_file", "aitf.mcp.tool.server": "filesystem", "aitf.mcp.connection.id": "conn-fs-abc123",
			"aitf.mcp.tool.input": `{"path":"/data/output.txt"}`, "aitf.mcp.tool.output": "File written successfully",
			"aitf.mcp.tool.response_error": "", "aitf.mcp.tool.is_error": false, "aitf.mcp.tool.duration_ms": 12.5,
			"aitf.mcp.server.transport": "streamable_http", "aitf.mcp.tool.approval_required": true, "aitf.mcp.tool.approved": true,
			"mcp.tool.input.content": `{"path":"/data/output.txt"}`, "mcp.tool.output.content": "File written successfully",
			"mcp.tool.output.type": "text", "mcp.tool.approval.status": "approved", "mcp.tool.approval.approver": "user@example.com",
		},
	},
	"aitf.mcp.resource.read": {
		op: &Operation{Method: "resources/read", RequestID: "3", Upstream: "filesystem", Session: "conn-fs-abc123",
			ResourceName: "config", Params: []byte(`{"uri":"file:///data/config.yaml"}`),
			Result: []byte(`{"contents":[{"uri":"file:///data/config.yaml","mimeType":"application/yaml","text":"port: 8080\n"}]}`)},
		want: map[string]any{"aitf.mcp.resource.uri": "file:///data/config.yaml", "aitf.mcp.server.name": "filesystem",
			"aitf.mcp.connection.id": "conn-fs-abc123", "aitf.mcp.resource.name": "config",
			"aitf.mcp.resource.mime_type": "application/yaml", "aitf.mcp.resource.size_bytes": int64(11)},
	},
	"aitf.mcp.resource.subscribe": {
		op: &Operation{Method: "resources/subscribe", RequestID: "4", Upstream: "filesystem", Session: "conn-fs-abc123",
			Params: []byte(`{"uri":"file:///data/config.yaml"}`), Result: []byte(`{}`)},
		want: map[string]any{"aitf.mcp.resource.uri": "file:///data/config.yaml", "aitf.mcp.server.name": "filesystem",
			"aitf.mcp.connection.id": "conn-fs-abc123"},
	},
	"aitf.mcp.prompt.get": {
		op: &Operation{Method: "prompts/get", RequestID: "5", Upstream: "filesystem",
			Params: []byte(`{"name":"code_review","arguments":{"lang":"go"}}`),
			Result: []byte(`{"description":"Review a change","messages":[]}`)},
		want: map[string]any{"aitf.mcp.prompt.name": "code_review", "aitf.mcp.server.name": "filesystem",
			"aitf.mcp.prompt.arguments": `{"lang":"go"}`, "aitf.mcp.prompt.description": "Review a change"},
	},
	"aitf.mcp.sampling.request": {
		op: &Operation{Method: "sampling/createMessage", FromUpstream: true, RequestID: "6", Upstream: "filesystem",
			Params: []byte(`{"messages":[],"modelPreferences":{"hints":[{"name":"claude-3-5-sonnet"}]},"maxTokens":512,"includeContext":"thisServer"}`),
			Result: []byte(`{"role":"assistant","content":{"type":"text","text":"hi"},"model":"claude-3-5-sonnet-20241022"}`),
			Usage:  &Usage{InputTokens: 120, OutputTokens: 45}},
		want: map[string]any{"aitf.mcp.server.name": "filesystem", "aitf.mcp.sampling.model": "claude-3-5-sonnet",
			"aitf.mcp.sampling.max_tokens": int64(512), "aitf.mcp.sampling.include_context": "thisServer",
			"gen_ai.usage.input_tokens": int64(120), "gen_ai.usage.output_tokens": int64(45)},
	},
}

// seedType maps the seed's type column to the attribute type it implies.
var seedType = map[string]attribute.Type{
	"string": attribute.STRING, "int": attribute.INT64, "double": attribute.FLOAT64,
	"boolean": attribute.BOOL, "string[]": attribute.STRINGSLICE,
}

// TestGoldenSpans checks one span per seed span type: its name and kind as
// the seed gives them, and every attribute and event field of the seed's
// tables with the fixture's value and the seed's type.
func TestGoldenSpans(t *testing.T) {
	seedtable.Need(t)
	spans := seedtable.Spans()
	if len(spans) != 8 {
		t.Fatalf("seed has %d span types", len(spans))
	}
	for _, seed := range spans {
		t.Run(seed.Type, func(t *testing.T) {
			g, ok := goldens[seed.Type]
			if !ok {
				t.Fatalf("no golden fixture for %s", seed.Type)
			}
			op := *g.op
			span := record(t, Options{Capture: Capture{Mode: CaptureFull}}, &op)

			wantName := seed.NameFmt
			for k, v := range g.want {
				wantName = strings.ReplaceAll(wantName, "{"+k+"}", fmt.Sprint(v))
			}
			if span.Name() != wantName {
				t.Errorf("span name = %q, want %q (seed: %q)", span.Name(), wantName, seed.NameFmt)
			}
			if got := strings.ToUpper(span.SpanKind().String()); got != seed.Kind {
				t.Errorf("span kind = %s, want %s", got, seed.Kind)
			}

			attrs := attrMap(span.Attributes())
			check := func(where string, f seedtable.Field, got map[string]attribute.Value) {
				want, ok := g.want[f.Name]
				if !ok {
					if f.Requirement != "Optional" {
						t.Errorf("fixture gives no value for %s field %s", f.Requirement, f.Name)
					}
					return
				}
				v, ok := got[f.Name]
				if !ok {
					t.Errorf("%s: %s field %s missing", where, f.Requirement, f.Name)
					return
				}
				if v.Type() != seedType[f.Type] {
					t.Errorf("%s: %s has type %s, the seed says %s", where, f.Name, v.Type(), f.Type)
				}
				if fmt.Sprint(v.AsInterface()) != fmt.Sprint(want) {
					t.Errorf("%s: %s = %v, want %v", where, f.Name, v.AsInterface(), want)
				}
			}
			seedKeys := map[string]bool{}
			for _, f := range seed.Fields {
				seedKeys[f.Name] = true
				check("span", f, attrs)
			}
			for k := range attrs {
				if strings.HasPrefix(k, "aitf.") && !seedKeys[k] {
					t.Errorf("attribute %s is not in the seed's table for %s", k, seed.Type)
				}
			}
			events := map[string]map[string]attribute.Value{}
			for _, e := range span.Events() {
				events[e.Name] = attrMap(e.Attributes)
			}
			for _, e := range seed.Events {
				got, ok := events[e.Name]
				if !ok {
					t.Errorf("event %s missing", e.Name)
					continue
				}
				for _, f := range e.Fields {
					check("event "+e.Name, f, got)
				}
			}
		})
	}
}

// TestOTelAttributes checks the OpenTelemetry MCP convention names (from
// the OTel MCP semconv table in shared/reference/telemetry.md) on a tool
// call, and that the OTel-only convention uses OTel span names and kinds.
func TestOTelAttributes(t *testing.T) {
	op := *goldens["aitf.mcp.tool.invoke"].op
	op.RequestID = `"req-2"`
	op.ProtocolVersion = "2025-06-18"
	span := record(t, Options{}, &op)
	want := map[string]string{
		"mcp.method.name": "tools/call", "jsonrpc.request.id": "req-2", "mcp.session.id": "conn-fs-abc123",
		"mcp.protocol.version": "2025-06-18", "network.transport": "pipe", "gen_ai.tool.name": "write_file",
		"gen_ai.operation.name": "execute_tool",
	}
	attrs := attrMap(span.Attributes())
	for k, v := range want {
		if got := attrs[k].String(); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if _, ok := attrs["error.type"]; ok {
		t.Error("error.type set on a successful call")
	}

	op = *goldens["aitf.mcp.tool.invoke"].op
	span = record(t, Options{Conventions: []Convention{ConventionOTel}}, &op)
	if span.Name() != "tools/call write_file" || span.SpanKind().String() != "server" {
		t.Errorf("otel only: span %q kind %s, want \"tools/call write_file\" server", span.Name(), span.SpanKind())
	}
	for _, kv := range span.Attributes() {
		if strings.HasPrefix(string(kv.Key), "aitf.") {
			t.Errorf("otel only: AITF attribute %s emitted", kv.Key)
		}
	}
	if len(span.Events()) != 0 {
		t.Errorf("otel only: seed events emitted: %v", span.Events())
	}

	op = *goldens["aitf.mcp.prompt.get"].op
	span = record(t, Options{Conventions: []Convention{ConventionAITF}}, &op)
	for _, kv := range span.Attributes() {
		if k := string(kv.Key); strings.HasPrefix(k, "mcp.method") || strings.HasPrefix(k, "gen_ai.") {
			t.Errorf("aitf only: OTel attribute %s emitted", k)
		}
	}
	// gen_ai.operation.name is for tool calls only.
	op = *goldens["aitf.mcp.resource.read"].op
	if _, ok := attrMap(record(t, Options{}, &op).Attributes())["gen_ai.operation.name"]; ok {
		t.Error("gen_ai.operation.name set on resources/read")
	}
}

func TestDenialAndErrors(t *testing.T) {
	op := *goldens["aitf.mcp.tool.invoke"].op
	op.Result = nil
	op.Approval, op.Approver = "", ""
	op.Denial = &Denial{Stage: "zero-trust", Rule: "params-hash", Invariant: "INV-3", Reason: "arguments do not match the token"}
	op.Error = &RPCError{Code: -32001, Message: "denied"}
	op.AuditSeq, op.ParamsHash, op.JTI = 17, "abc123", "jti-9"
	span := record(t, Options{}, &op)
	a := attrMap(span.Attributes())
	for k, v := range map[string]string{"warden.decision": "deny", "warden.stage": "zero-trust", "warden.rule": "params-hash",
		"warden.invariant": "INV-3", "warden.params_hash": "abc123", "warden.jti": "jti-9", "warden.audit.seq": "17",
		"error.type": "-32001", "rpc.response.status_code": "-32001", "aitf.mcp.tool.is_error": "true",
		"aitf.mcp.tool.approval_required": "false"} {
		if got := a[k].String(); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if !strings.Contains(a["aitf.mcp.tool.response_error"].AsString(), "arguments do not match") {
		t.Errorf("response_error = %q", a["aitf.mcp.tool.response_error"].AsString())
	}
	if span.Status().Code.String() != "Error" {
		t.Errorf("status = %v, want Error", span.Status())
	}

	op = *goldens["aitf.mcp.tool.invoke"].op
	op.Result = []byte(`{"content":[{"type":"text","text":"no such file"}],"isError":true}`)
	a = attrMap(record(t, Options{}, &op).Attributes())
	if a["error.type"].AsString() != "tool_error" || a["aitf.mcp.tool.response_error"].AsString() != "no such file" ||
		a["warden.decision"].AsString() != "error" {
		t.Errorf("tool error: error.type %q response_error %q decision %q", a["error.type"].AsString(),
			a["aitf.mcp.tool.response_error"].AsString(), a["warden.decision"].AsString())
	}
}

// TestGoldenOCSFIsValid: the standard-profile OCSF events of every span
// type's operation are valid OCSF, a disconnect (which has no MCP method)
// included.
func TestGoldenOCSFIsValid(t *testing.T) {
	for name, g := range goldens {
		sink := &memorySink{}
		op := *g.op
		NewRecorder(Options{OCSFSink: sink, OCSFProfile: ocsf.ProfileStandard}).Record(context.Background(), &op)
		if len(sink.out) == 0 {
			t.Errorf("%s: no OCSF event", name)
		}
		for _, e := range sink.out {
			if errs := ocsf.Validate([]byte(e)); len(errs) > 0 {
				t.Errorf("%s: invalid OCSF event %v:\n%s", name, errs, e)
			}
		}
	}
}
