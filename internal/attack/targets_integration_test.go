//go:build integration

package attack_test

import (
	"path/filepath"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentwarden/warden/internal/attack"
	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/telemetry"
	"github.com/agentwarden/warden/internal/testenv"
)

func target(name string) string { return filepath.Join("testdata", "targets", name) }

// runDoc runs one document and fails the test when the verdict differs.
func runDoc(t *testing.T, file string, opts attack.Options, want string) *attack.Result {
	t.Helper()
	res, err := attack.Run(testCtx(t), load(t, file), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed() {
		t.Fatalf("%s: an actor failed: %+v", file, res.Actors)
	}
	if res.Verdict.Result != want {
		var b strings.Builder
		attack.WriteSummary(&b, res)
		t.Fatalf("%s: verdict %s, want %s\n%s", file, res.Verdict.Result, want, b.String())
	}
	return res
}

// TestServerEverything runs mcp_client documents against the reference MCP
// server over stdio, started with a canary secret in its environment: get-env
// leaks it (exploited); echo does not (not_exploited).
func TestServerEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an external server")
	}
	node, bin := testenv.Node22(t), testenv.EverythingServer(t)
	opts := attack.Options{MCPCommand: []string{node, bin, "stdio"},
		MCPEnv: map[string]string{"SECRET_TOKEN": "canary-7f3a"}}
	res := runDoc(t, target("everything-env-leak.yaml"), opts, oatf.Exploited)
	if ir := res.Indicators[0]; !strings.Contains(ir.Evidence, "canary-") || ir.Method != "tools/call" {
		t.Errorf("indicator %+v: want the canary as evidence from tools/call", ir)
	}
	// The run's messages are telemetry too: each becomes a span.
	sr := tracetest.NewSpanRecorder()
	opts.Spans = telemetry.NewRecorder(telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))})
	res = runDoc(t, target("everything-echo.yaml"), opts, oatf.NotExploited)
	var invoke bool
	for _, s := range sr.Ended() {
		if strings.HasPrefix(s.Name(), "mcp.tool.invoke echo") {
			invoke = true
		}
	}
	if !invoke {
		t.Errorf("the run's tools/call is not among its %d spans", len(sr.Ended()))
	}
	var echoed bool
	for _, e := range res.Trace {
		if e.Method == "tools/call" && e.Direction == attack.Response && strings.Contains(oatf.CompactJSON(e.Content), "Echo: hello echo") {
			echoed = true
		}
	}
	if !echoed {
		t.Errorf("no echo of the templated message in the trace: the extractor or template did not work")
	}
}

// TestServerEverythingPeerRequests runs mcp_client documents whose
// sampling_responses and elicitation_responses answer the reference
// server's trigger-sampling-request and trigger-elicitation-request tools.
// The server puts both answers into its tool results: when the `when`
// entries pick the marked payloads, exploited on both indicators; when they
// fall back to a harmless completion and a decline, not exploited.
func TestServerEverythingPeerRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an external server")
	}
	node, bin := testenv.Node22(t), testenv.EverythingServer(t)
	opts := attack.Options{MCPCommand: []string{node, bin, "stdio"}}
	res := runDoc(t, target("everything-peer-requests.yaml"), opts, oatf.Exploited)
	for _, ir := range res.Indicators {
		if ir.Result != oatf.Matched {
			t.Errorf("%s = %s, want matched", ir.IndicatorID, ir.Result)
		}
	}
	// The client declared both capabilities (the server registers these
	// tools only then), and the client's answers to the server's requests
	// are in the trace as responses under the request's method.
	var caps *oatf.Value
	answered := map[string]string{}
	for _, e := range res.Trace {
		switch {
		case e.Method == "initialize" && e.Direction == attack.Request:
			caps = e.Content.Get("capabilities")
		case (e.Method == "sampling/createMessage" || e.Method == "elicitation/create") && e.Direction == attack.Response:
			answered[e.Method] = oatf.CompactJSON(e.Content)
		}
	}
	if caps == nil || caps.Get("sampling") == nil || caps.Get("elicitation") == nil {
		t.Errorf("initialize capabilities %s, want sampling and elicitation", oatf.CompactJSON(caps))
	}
	if !strings.Contains(answered["sampling/createMessage"], "canary-sampled") ||
		!strings.Contains(answered["elicitation/create"], `"action":"accept"`) {
		t.Errorf("answers traced: %v", answered)
	}

	res = runDoc(t, target("everything-peer-declined.yaml"), opts, oatf.NotExploited)
	var declined, harmless bool
	for _, e := range res.Trace {
		if e.Direction != attack.Response {
			continue
		}
		switch e.Method {
		case "elicitation/create":
			declined = e.Content.Get("action").StringOr("") == "decline"
		case "tools/call":
			harmless = harmless || strings.Contains(oatf.CompactJSON(e.Content), "nothing to add")
		}
	}
	if !declined || !harmless {
		t.Errorf("elicitation declined %v, the fallback completion reflected %v; want both", declined, harmless)
	}
}

// startAimock runs aimock with the test's fixture on a loopback port and
// returns its base URL. It stops the process it started.
func startAimock(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs an external server")
	}
	bin := testenv.Aimock(t)
	cfg, err := filepath.Abs(filepath.Join("testdata", "aimock", "aimock.json"))
	if err != nil {
		t.Fatal(err)
	}
	addr := testenv.StartNode(t, "aimock", bin, func(port string) []string { return []string{"-c", cfg, "-p", port, "--host", "127.0.0.1"} })
	return "http://" + addr
}

// TestAimock runs ag_ui_client and mcp_client documents against aimock.
// AG-UI: a request that makes the agent call read_file for ~/.ssh/id_rsa is
// exploited, and the runtime answers the frontend tool call from
// tool_responses in a follow-up RunAgentInput; a greeting is not. MCP: the
// poisoned tool description is exploited; the harmless result is not.
func TestAimock(t *testing.T) {
	base := startAimock(t)
	opts := attack.Options{AGUIURL: base + "/agui"}
	res := runDoc(t, target("agui-read-secret.yaml"), opts, oatf.Exploited)
	got := map[string]string{}
	for _, ir := range res.Indicators {
		got[ir.IndicatorID] = ir.Result
	}
	if got["WARDEN-ATK-003-01"] != oatf.Matched {
		t.Errorf("tool_call_end toolCallName indicator = %s: the runtime did not enrich tool_call_end", got["WARDEN-ATK-003-01"])
	}
	var result, followUp, answered bool
	for _, e := range res.Trace {
		switch {
		case e.Method == "tool_call_result" && e.Direction == attack.Request:
			result = strings.Contains(e.Content.Get("content").StringOr(""), "canary-key")
		case e.Method == "run_agent_input" && strings.Contains(oatf.CompactJSON(e.Content), `"role":"tool"`):
			followUp = true
		case e.Method == "text_message_content" && strings.Contains(e.Content.Get("delta").StringOr(""), "I read the key file"):
			answered = true
		}
	}
	if !result || !followUp || !answered {
		t.Errorf("tool result from tool_responses %v, follow-up RunAgentInput with a tool message %v, agent's answer to it %v; want all",
			result, followUp, answered)
	}
	runDoc(t, target("agui-greeting.yaml"), opts, oatf.NotExploited)

	mcp := attack.Options{MCPURL: base + "/mcp"}
	runDoc(t, target("aimock-mcp-poisoned.yaml"), mcp, oatf.Exploited)
	runDoc(t, target("aimock-mcp-result.yaml"), mcp, oatf.NotExploited)
}
