package gateway

import (
	"fmt"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentwarden/warden/internal/telemetry"
)

// A tool-policy refusal, as a SIEM gets it: its span carries the code the
// client got as rpc.response.status_code, and its Detection Finding is
// tagged excessive agency (LLM06), not prompt injection (LLM01, ATLAS
// AML.T0051), though the call's span carried its input.
func TestToolPolicyRefusalSpanAndFinding(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	sink := &eventSink{}
	rec := telemetry.NewRecorder(telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)),
		OCSFSink: sink})
	h := newHarness(t, RelayOptions{Upstream: "files", Pipeline: NewPipeline(ToolPolicy{List: mustList(t, nil, []string{"get_env"})}),
		Recorder: &Records{Spans: rec, Transport: telemetry.TransportStdio}})
	h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_env","arguments":{"name":"HOME"}}}`)
	code, d := detailOf(t, h.recv(h.client))
	if d.Stage != "tool-policy" {
		t.Fatalf("refused by %+v, want tool-policy", d)
	}
	s := endedSpan(t, sr, "mcp.tool.invoke get_env")
	if got, want := spanAttrs(s)["rpc.response.status_code"], fmt.Sprint(code); got != want {
		t.Errorf("rpc.response.status_code = %q, want %q, the code the client got", got, want)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var found bool
	for i, ev := range sink.out {
		if ev["class_uid"] != 2004.0 {
			continue
		}
		found = true
		raw := string(sink.raw[i])
		tags, _ := ev["unmapped"].(map[string]any)["compliance"].(map[string]any)
		if fmt.Sprint(tags) != "map[owasp_llm:[LLM06]]" || strings.Contains(raw, "AML.T0051") {
			t.Errorf("the refusal's Detection Finding is tagged %v (attacks in %s), want LLM06 only", tags, raw)
		}
	}
	if !found {
		t.Fatal("no Detection Finding for the refusal")
	}
}
