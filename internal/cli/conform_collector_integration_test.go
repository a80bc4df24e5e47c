//go:build integration

package cli

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/testenv"
)

// TestConformReplaySpansReachARealCollector: `warden conform replay
// --warden --otlp URL` against the fake MCP server over HTTP sends its
// spans to a real OpenTelemetry Collector (otelcol-warden, built by make
// deps): a span per probe, plain and behind warden, and under each the
// spans of the messages it sent, with the seed's and OpenTelemetry's names,
// in the probe's trace.
func TestConformReplaySpansReachARealCollector(t *testing.T) {
	col := testenv.StartOtelcol(t)
	code, out, errs := runConformTest(t, "replay", "--target", "mock:mcp-http", "--warden", "--otlp", col.HTTPURL)
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d (the fake reproduces its findings)\n%s%s", code, ExitFindings, out, errs)
	}
	// The command returns after its exporter shut down: every span left.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	probes := []string{"SL_lifecycle", "P4_prompt_integrity", "P1_identity", "P5_consent", "WF_wire"}
	probe := func(spans []testenv.CollectorSpan, target, property string) *testenv.CollectorSpan {
		for i, s := range spans {
			if s.Name == "conform.replay mcp/"+property && s.Attrs["warden.conform.target"] == target {
				return &spans[i]
			}
		}
		return nil
	}
	spans, err := col.Wait(ctx, func(spans []testenv.CollectorSpan) bool {
		for _, p := range probes {
			if probe(spans, "mock-mcp-http", p) == nil || probe(spans, "mock-mcp-http+warden", p) == nil {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("%v\ncollector log:\n%s", err, col.Log())
	}

	for _, target := range []string{"mock-mcp-http", "mock-mcp-http+warden"} {
		p := probe(spans, target, "P1_identity")
		want := map[string]any{"mock-mcp-http": "reproduced", "mock-mcp-http+warden": "blocked"}[target]
		if p.Attrs["warden.conform.outcome"] != want || p.Kind != 1 || p.Resource["service.name"] != "warden" {
			t.Errorf("%s P1 probe span: kind %d, attributes %v, resource %v", target, p.Kind, p.Attrs, p.Resource)
		}
		var children []string
		var invoke *testenv.CollectorSpan
		for i, s := range spans {
			if s.ParentSpanID == p.SpanID {
				if s.TraceID != p.TraceID {
					t.Errorf("%s: span %q is not in its probe's trace", target, s.Name)
				}
				children = append(children, s.Name)
				if s.Name == "mcp.tool.invoke transfer" {
					invoke = &spans[i]
				}
			}
		}
		if !slices.Contains(children, "mcp.server.connect "+target) || !slices.Contains(children, "notifications/initialized") || invoke == nil {
			t.Fatalf("%s P1 probe: operations %v, want connect, initialized and the call", target, children)
		}
		for k, v := range map[string]any{
			"aitf.mcp.tool.name": "transfer", "aitf.mcp.tool.server": target, "aitf.mcp.server.transport": "streamable_http",
			"mcp.method.name": "tools/call", "gen_ai.tool.name": "transfer", "gen_ai.operation.name": "execute_tool",
			"network.transport": "tcp",
		} {
			if got := invoke.Attrs[k]; got != v {
				t.Errorf("%s: invoke span %s = %v, want %v", target, k, got, v)
			}
		}
		if invoke.Kind != 3 || !slices.Contains(invoke.Events, "mcp.tool.input") {
			t.Errorf("%s: invoke span kind %d events %v, want client with mcp.tool.input", target, invoke.Kind, invoke.Events)
		}
		// Behind warden the call without a token is refused: an error span.
		if refused := target == "mock-mcp-http+warden"; refused != (invoke.StatusCode == 2) || refused != (invoke.Attrs["error.type"] != nil) {
			t.Errorf("%s: invoke span status %d error.type %v", target, invoke.StatusCode, invoke.Attrs["error.type"])
		}
	}
}
