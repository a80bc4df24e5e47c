//go:build integration

package gateway_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/testenv"
)

// TestApprovalSpansReachARealCollector: a real go-sdk client's user
// approves one held transfer and declines another through elicitation; at
// a real OpenTelemetry Collector each transfer's mcp.tool.invoke span has
// two mcp.tool.approval events (requested, then the decision), and the
// declined one carries the code the client got as rpc.response.status_code.
// (The events' attributes and times are checked in-process by
// TestHeldCallSpanCoversTheWaitAndItsApproval and TestHeldCallSpanOfADenial.)
func TestApprovalSpansReachARealCollector(t *testing.T) {
	col := testenv.StartOtelcol(t)
	ctx := testCtx(t)
	dataDir := keyedDataDir(t)
	up, _ := demoUpstream(t, false)
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust: {data_dir: %q, subject: alice, store: memory, hold_for_approval: true, approval_channels: [elicitation]}
  upstreams:
    - name: demo
      url: %s
      require_token: [transfer_funds]
telemetry:
  spans: {exporter: otlp, endpoint: %q}
  ocsf: {exporter: none}
`, dataDir, up, col.HTTPURL))
	srv := httptest.NewServer(g.Handler())
	closed := false
	t.Cleanup(func() {
		srv.Close()
		if !closed {
			g.Close()
		}
	})
	client := mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			approve := strings.Contains(req.Params.Message, `"amount": 2500`)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": approve}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	transfer := func(id string, amount int) error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds", Meta: mcp.Meta{"traceparent": "00-" + id + "-eee19b7ec3c1b174-01"},
			Arguments: map[string]any{"account_id": "ACC_123", "amount": amount, "recipient": "vendor@example.com"}})
		return err
	}
	const approvedTrace, declinedTrace = "5b8efff798038103d269b633813fc601", "5b8efff798038103d269b633813fc602"
	if err := transfer(approvedTrace, 2500); err != nil {
		t.Fatalf("the approved call: %v", err)
	}
	if err := transfer(declinedTrace, 900000); wardenRefusal(t, err) != "zero-trust" {
		t.Fatalf("the declined call: %v", err)
	}
	cs.Close()
	srv.Close()
	g.Close() // the spans leave now
	closed = true

	invoke := func(spans []testenv.CollectorSpan, trace string) *testenv.CollectorSpan {
		for i := range spans {
			if spans[i].Name == "mcp.tool.invoke transfer_funds" && spans[i].TraceID == trace {
				return &spans[i]
			}
		}
		return nil
	}
	spans, err := col.Wait(ctx, func(spans []testenv.CollectorSpan) bool {
		return invoke(spans, approvedTrace) != nil && invoke(spans, declinedTrace) != nil
	})
	if err != nil {
		t.Fatalf("%v\nspans: %v\ncollector log:\n%s", err, spanNames(spans), col.Log())
	}
	for _, trace := range []string{approvedTrace, declinedTrace} {
		s := invoke(spans, trace)
		n := 0
		for _, e := range s.Events {
			if e == "mcp.tool.approval" {
				n++
			}
		}
		if n != 2 {
			t.Errorf("trace %s: %d mcp.tool.approval events (%v), want requested and the decision", trace, n, s.Events)
		}
	}
	declined := invoke(spans, declinedTrace)
	if got := declined.Attrs["rpc.response.status_code"]; got != "-32001" || declined.Attrs["warden.rule"] != "approval-denied" {
		t.Errorf("declined span: rpc.response.status_code %v, warden.rule %v; want -32001, approval-denied", got, declined.Attrs["warden.rule"])
	}
}
