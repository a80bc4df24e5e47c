//go:build integration

package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/testenv"
)

// tracedDemoUpstream serves the demo server like demoUpstream, and keeps
// the params._meta.traceparent of every tools/call it receives, by tool.
// (The demo server, a go-sdk server, emits no spans of its own; what it was
// sent is how the upstream leg joins the trace.)
func tracedDemoUpstream(t *testing.T) (url string, traceparents func(tool string) []string) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string][]string{}
	server := demoserver.New(demoserver.Options{Root: t.TempDir(), Ledger: demoserver.NewLedger()})
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
				tp, _ := p.GetMeta()["traceparent"].(string)
				mu.Lock()
				seen[p.Name] = append(seen[p.Name], tp)
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, func(tool string) []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen[tool])
	}
}

// TestSpansReachARealCollector: a real go-sdk client calls the demo server
// through a gateway configured, from YAML, to export spans over OTLP/HTTP to
// a real OpenTelemetry Collector at its documented base URL (otelcol-warden, built by make deps). The
// spans arrive at the collector with the seed's and OpenTelemetry's
// attributes, and form one trace: the client's span is the parent of
// warden's, and the traceparent the upstream received names warden's span.
func TestSpansReachARealCollector(t *testing.T) {
	col := testenv.StartOtelcol(t)
	ctx := testCtx(t)
	up, traceparents := tracedDemoUpstream(t)
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  upstreams:
    - name: demo
      url: %s
      tools: {deny: [get_env]}
telemetry:
  spans: {exporter: otlp, endpoint: %q}
  ocsf: {exporter: none}
`, up, col.HTTPURL))
	srv := httptest.NewServer(g.Handler())
	closed := false
	t.Cleanup(func() {
		srv.Close()
		if !closed {
			g.Close()
		}
	})
	cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, "2025-11-25")

	// The client's own span, as an instrumented agent would send it.
	const traceID, clientSpanID = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
	meta := mcp.Meta{"traceparent": "00-" + traceID + "-" + clientSpanID + "-01"}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: "echo", Arguments: map[string]any{"message": "hello collector"}})
	if err != nil || res.IsError || !strings.Contains(text(t, res), "hello collector") {
		t.Fatalf("echo: %v %+v", err, res)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: "get_env", Arguments: map[string]any{}}); wardenRefusal(t, err) != "tool-policy" {
		t.Fatalf("get_env: %v", err)
	}
	cs.Close()
	srv.Close()
	g.Close() // shuts the tracer provider down: the spans leave now
	closed = true

	spans, err := col.Wait(ctx, func(spans []testenv.CollectorSpan) bool {
		return findSpan(spans, "mcp.tool.invoke echo") != nil && findSpan(spans, "mcp.tool.invoke get_env") != nil &&
			findSpan(spans, "mcp.server.connect demo") != nil
	})
	if err != nil {
		t.Fatalf("%v\nspans: %v\ncollector log:\n%s", err, spanNames(spans), col.Log())
	}

	echo := findSpan(spans, "mcp.tool.invoke echo")
	for k, want := range map[string]any{
		// the seed (AITF)
		"aitf.mcp.tool.name": "echo", "aitf.mcp.tool.server": "demo", "aitf.mcp.server.transport": "streamable_http",
		"aitf.mcp.tool.is_error": false,
		// OpenTelemetry MCP semantic conventions
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"network.transport": "tcp",
		// warden
		"warden.decision": "allow", "warden.upstream": "demo",
	} {
		if got := echo.Attrs[k]; got != want {
			t.Errorf("echo span: %s = %v (%T), want %v", k, got, got, want)
		}
	}
	for _, k := range []string{"jsonrpc.request.id", "mcp.session.id", "aitf.mcp.connection.id", "aitf.mcp.tool.duration_ms"} {
		if _, ok := echo.Attrs[k]; !ok {
			t.Errorf("echo span lacks %s", k)
		}
	}
	if out, _ := echo.Attrs["aitf.mcp.tool.output"].(string); !strings.Contains(out, "hello collector") {
		t.Errorf("echo span: aitf.mcp.tool.output = %q", out)
	}
	if !slices.Contains(echo.Events, "mcp.tool.input") || !slices.Contains(echo.Events, "mcp.tool.output") {
		t.Errorf("echo span events = %v, want mcp.tool.input and mcp.tool.output", echo.Events)
	}
	if echo.Kind != 3 { // CLIENT, as the seed says
		t.Errorf("echo span kind = %d, want 3 (client)", echo.Kind)
	}

	// One trace: client span ► warden's span ► the upstream's request.
	if echo.TraceID != traceID || echo.ParentSpanID != clientSpanID {
		t.Errorf("echo span: trace %s parent %s, want the client's %s / %s", echo.TraceID, echo.ParentSpanID, traceID, clientSpanID)
	}
	if got, want := traceparents("echo"), "00-"+traceID+"-"+echo.SpanID+"-01"; len(got) != 1 || got[0] != want {
		t.Errorf("the upstream received traceparent %q, want %q (warden's span)", got, want)
	}

	// The refusal is in the backend too, as an error in the same trace,
	// and never reached the upstream.
	deny := findSpan(spans, "mcp.tool.invoke get_env")
	if deny.Attrs["warden.decision"] != "deny" || deny.Attrs["warden.stage"] != "tool-policy" || deny.StatusCode != 2 {
		t.Errorf("get_env span: decision %v stage %v status %d, want deny, tool-policy, error",
			deny.Attrs["warden.decision"], deny.Attrs["warden.stage"], deny.StatusCode)
	}
	if deny.TraceID != traceID || deny.ParentSpanID != clientSpanID {
		t.Errorf("get_env span: trace %s parent %s, want the client's", deny.TraceID, deny.ParentSpanID)
	}
	if got := traceparents("get_env"); len(got) != 0 {
		t.Errorf("the refused call reached the upstream: %q", got)
	}

	for _, s := range spans {
		if s.Resource["service.name"] != "warden" {
			t.Errorf("span %q: service.name = %v, want warden", s.Name, s.Resource["service.name"])
		}
	}
	connectSpan := findSpan(spans, "mcp.server.connect demo")
	if connectSpan.Attrs["mcp.method.name"] != "initialize" || connectSpan.Attrs["aitf.mcp.server.name"] != "demo" {
		t.Errorf("connect span attributes: %v", connectSpan.Attrs)
	}
}

func findSpan(spans []testenv.CollectorSpan, name string) *testenv.CollectorSpan {
	for i := range spans {
		if spans[i].Name == name {
			return &spans[i]
		}
	}
	return nil
}

func spanNames(spans []testenv.CollectorSpan) []string {
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	return names
}
