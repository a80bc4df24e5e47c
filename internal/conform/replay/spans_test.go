package replay

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/internal/telemetry"
)

// recordedReplay runs every probe of t with spans in an in-memory exporter
// and returns the report and the spans.
func recordedReplay(t *testing.T, tgt *Target, traces map[string]*Trace, conventions ...telemetry.Convention) (*Report, tracetest.SpanStubs) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	rec := telemetry.NewRecorder(telemetry.Options{Conventions: conventions,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))})
	rep, err := Run(testCtx(t), tgt, traces, Options{StepTimeout: 5 * time.Second, Spans: rec})
	if err != nil {
		t.Fatal(err)
	}
	return rep, exp.GetSpans()
}

func attrs(s tracetest.SpanStub) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// wantAttrs checks string, int and bool attributes of a span by their
// printed value.
func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if g, ok := got[k]; !ok || g.String() != v {
			t.Errorf("span %q: %s = %q (present %v), want %q", s.Name, k, g.String(), ok, v)
		}
	}
}

// spansOfProbe returns the probe's span and the operations' spans under it.
func spansOfProbe(t *testing.T, spans tracetest.SpanStubs, property string) (tracetest.SpanStub, []tracetest.SpanStub) {
	t.Helper()
	var probe tracetest.SpanStub
	for _, s := range spans {
		if s.Name == "conform.replay "+property {
			probe = s
		}
	}
	if !probe.SpanContext.IsValid() {
		t.Fatalf("no span for probe %s among %d", property, len(spans))
	}
	var ops []tracetest.SpanStub
	for _, s := range spans {
		if s.Parent.SpanID() == probe.SpanContext.SpanID() {
			if s.SpanContext.TraceID() != probe.SpanContext.TraceID() {
				t.Errorf("span %q is not in its probe's trace", s.Name)
			}
			ops = append(ops, s)
		}
	}
	return probe, ops
}

func byName(ops []tracetest.SpanStub, name string) (tracetest.SpanStub, bool) {
	for _, s := range ops {
		if s.Name == name {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

func names(ss []tracetest.SpanStub) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

// Every message a replay sends and its answer is a span with the seed's
// AITF names and the OpenTelemetry MCP names, under a span per probe.
func TestReplaySpansMCP(t *testing.T) {
	tgt, stop, err := MockMCP(false, false, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	rep, spans := recordedReplay(t, tgt, modelTraces(t, "mcp"))

	for _, r := range rep.Results {
		probe, ops := spansOfProbe(t, spans, "mcp/"+r.Property)
		wantAttrs(t, probe, map[string]string{AttrTarget: "mock-mcp", AttrProtocol: MCP,
			AttrProperty: "mcp/" + r.Property, AttrPrinciple: r.Principle, AttrOutcome: string(r.Outcome)})
		if probe.SpanKind != trace.SpanKindInternal || (r.Outcome == Reproduced) != (probe.Status.Code == codes.Error) {
			t.Errorf("probe %s: kind %v, status %v for outcome %s", r.Property, probe.SpanKind, probe.Status, r.Outcome)
		}
		if len(ops) == 0 {
			t.Errorf("probe %s sent nothing on record", r.Property)
		}
	}

	// P4: initialize, the initialized notification, tools/list, tools/call.
	_, ops := spansOfProbe(t, spans, "mcp/P4_prompt_integrity")
	connect, ok := byName(ops, "mcp.server.connect mock-mcp")
	if !ok {
		t.Fatalf("no connect span among %v", names(ops))
	}
	if connect.SpanKind != trace.SpanKindClient {
		t.Errorf("connect kind %v, want CLIENT", connect.SpanKind)
	}
	wantAttrs(t, connect, map[string]string{"aitf.mcp.server.name": "mock-mcp", "aitf.mcp.server.transport": "stdio",
		"aitf.mcp.protocol.version": "2025-11-25", "mcp.method.name": "initialize", "jsonrpc.request.id": "1",
		"network.transport": "pipe", "warden.decision": "allow"})
	if attrs(connect)["aitf.mcp.connection.id"].AsString() == "" {
		t.Error("connect span without aitf.mcp.connection.id")
	}
	initialized, ok := byName(ops, "notifications/initialized")
	if !ok {
		t.Fatalf("no span for the initialized notification among %v", names(ops))
	}
	if _, has := attrs(initialized)["jsonrpc.request.id"]; has {
		t.Error("a notification's span has jsonrpc.request.id")
	}
	discover, ok := byName(ops, "mcp.tool.discover mock-mcp")
	if !ok {
		t.Fatalf("no discover span among %v", names(ops))
	}
	wantAttrs(t, discover, map[string]string{"mcp.method.name": "tools/list", "aitf.mcp.server.name": "mock-mcp"})
	if n := attrs(discover)["aitf.mcp.tool.count"].AsInt64(); n < 1 {
		t.Errorf("discover span: aitf.mcp.tool.count %d", n)
	}
	invoke, ok := byName(ops, "mcp.tool.invoke get_env")
	if !ok {
		t.Fatalf("no invoke span among %v", names(ops))
	}
	wantAttrs(t, invoke, map[string]string{"aitf.mcp.tool.name": "get_env", "aitf.mcp.tool.server": "mock-mcp",
		"aitf.mcp.tool.is_error": "false", "gen_ai.tool.name": "get_env", "gen_ai.operation.name": "execute_tool",
		"mcp.method.name": "tools/call", "aitf.mcp.tool.approval_required": "false"})
	// The tool's output is captured redacted and capped, as on the gateway.
	if out := attrs(invoke)["aitf.mcp.tool.output"].AsString(); out == "" || len(out) > telemetry.DefaultMaxBytes+64 {
		t.Errorf("invoke span: aitf.mcp.tool.output %q", out)
	}
	var events []string
	for _, e := range invoke.Events {
		events = append(events, e.Name)
	}
	if !reflect.DeepEqual(events, []string{"mcp.tool.input", "mcp.tool.output"}) {
		t.Errorf("invoke span events %v", events)
	}

	// WF: the raw frame is on record under the method a lenient parser
	// reads first, without params.
	_, ops = spansOfProbe(t, spans, "mcp/WF_wire")
	if _, ok := byName(ops, "ping"); !ok {
		t.Errorf("no span for the ambiguous frame among %v", names(ops))
	}
}

// A refused call is an error span with the JSON-RPC code as error.type;
// with OpenTelemetry names only, replay's requests are CLIENT spans.
func TestReplaySpansRefusalOTelOnly(t *testing.T) {
	tgt, stop, err := MockMCP(true, true, "2025-06-18")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	_, spans := recordedReplay(t, tgt, nil, telemetry.ConventionOTel)
	_, ops := spansOfProbe(t, spans, "mcp/SL_lifecycle")
	call, ok := byName(ops, "tools/call echo")
	if !ok {
		t.Fatalf("no tools/call span among %v", names(ops))
	}
	if call.SpanKind != trace.SpanKindClient || call.Status.Code != codes.Error {
		t.Errorf("early call: kind %v status %v, want CLIENT and an error", call.SpanKind, call.Status)
	}
	a := attrs(call)
	if a["error.type"].AsString() == "" || a["rpc.response.status_code"].AsString() != a["error.type"].AsString() {
		t.Errorf("early call: error.type %q, rpc.response.status_code %q", a["error.type"].AsString(), a["rpc.response.status_code"].AsString())
	}
	wantAttrs(t, call, map[string]string{"network.transport": "tcp", "network.protocol.name": "http", "warden.decision": "error"})
	for k := range a {
		if strings.HasPrefix(k, "aitf.") {
			t.Errorf("OTel-only span has %s", k)
		}
	}
}

// A2A and AG-UI operations are spans named by their method, with the HTTP
// status of the answer.
func TestReplaySpansA2AAndAGUI(t *testing.T) {
	tgt, stop, err := MockA2A(false, A2A10)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	_, spans := recordedReplay(t, tgt, modelTraces(t, "a2a"))
	_, ops := spansOfProbe(t, spans, "a2a/P1_identity")
	send, ok := byName(ops, "SendMessage")
	if !ok {
		t.Fatalf("no SendMessage span among %v", names(ops))
	}
	wantAttrs(t, send, map[string]string{"mcp.method.name": "SendMessage", AttrHTTPStatus: "200", "warden.upstream": "mock-a2a"})
	if _, ok := byName(ops, "GetExtendedAgentCard"); !ok {
		t.Errorf("no GetExtendedAgentCard span among %v", names(ops))
	}

	ag, stop, err := MockAGUI(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	_, spans = recordedReplay(t, ag, nil)
	_, ops = spansOfProbe(t, spans, "agui/WF_events")
	run, ok := byName(ops, AGUIRunMethod)
	if !ok {
		t.Fatalf("no run span among %v", names(ops))
	}
	wantAttrs(t, run, map[string]string{AttrHTTPStatus: "200"})
}

// Telemetry changes nothing on the wire: a replay sends the same bytes
// with spans on and off.
func TestReplaySpansSendTheSameBytes(t *testing.T) {
	tgt, stop, err := MockMCP(false, false, "2026-07-28")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	traces := modelTraces(t, "mcp")
	plain, err := Run(testCtx(t), tgt, traces, Options{StepTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	traced, spans := recordedReplay(t, tgt, traces)
	if len(spans) == 0 {
		t.Fatal("no spans")
	}
	a, _ := json.Marshal(plain)
	b, _ := json.Marshal(traced)
	if string(a) != string(b) {
		t.Errorf("reports differ with telemetry on:\n%s\n%s", a, b)
	}
}
