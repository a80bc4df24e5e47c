//go:build integration

package gateway_test

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// TestZeroTrustThroughTheGateway: a go-sdk client calls transfer_funds on
// the demo server through a gateway configured to require tokens, with the
// SQLite replay store in the data dir. It covers the missing, valid,
// replayed and tampered token, and a replay after the gateway restarts.
func TestZeroTrustThroughTheGateway(t *testing.T) {
	ctx := testCtx(t)
	dataDir := t.TempDir()
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ring.Rotate("EdDSA"); err != nil {
		t.Fatal(err)
	}
	up, ledger := demoUpstream(t, false)
	yaml := fmt.Sprintf(`version: 1
gateway:
  zero_trust: {data_dir: %q, subject: alice}
  upstreams:
    - name: demo
      url: %s
      require_token: [transfer_funds]
`, dataDir, up)
	start := func() (*mcp.ClientSession, func()) {
		cfg, err := config.Parse([]byte(yaml), "zt.yaml")
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			t.Fatal(err)
		}
		opts, err := gateway.FromConfig(cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		g, err := gateway.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(g.Handler())
		cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, "2025-11-25")
		return cs, func() { cs.Close(); srv.Close(); g.Close() }
	}
	args := map[string]any{"account_id": "ACC_123", "amount": 2500, "recipient": "vendor@example.com"}
	transfer := func(cs *mcp.ClientSession, args map[string]any, token string) (*mcp.CallToolResult, error) {
		p := &mcp.CallToolParams{Name: "transfer_funds", Arguments: args}
		if token != "" {
			p.Meta = mcp.Meta{gateway.MetaTokenKey: token}
		}
		return cs.CallTool(ctx, p)
	}
	token, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: "alice", Tool: "transfer_funds",
		Arguments: []byte(`{"recipient":"vendor@example.com","amount":2500,"account_id":"ACC_123"}`)})
	if err != nil {
		t.Fatal(err)
	}

	cs, stop := start()
	if _, err := transfer(cs, args, ""); wardenRefusal(t, err) != "zero-trust" {
		t.Fatal("a call without a token was not refused by zero-trust")
	}
	tampered := map[string]any{"account_id": "ACC_123", "amount": 250000, "recipient": "vendor@example.com"}
	if _, err := transfer(cs, tampered, token); wardenRefusal(t, err) != "zero-trust" {
		t.Fatal("a token for 2500 moved 250000")
	}
	if res, err := transfer(cs, args, token); err != nil || res.IsError {
		t.Fatalf("the approved call failed: %v %v", res, err)
	}
	if _, err := transfer(cs, args, token); wardenRefusal(t, err) != "zero-trust" {
		t.Fatal("a replayed token was accepted")
	}
	stop()

	// A new gateway on the same data dir remembers the used token.
	cs, stop = start()
	defer stop()
	if _, err := transfer(cs, args, token); wardenRefusal(t, err) != "zero-trust" {
		t.Fatal("the token was accepted again after a restart")
	}
	if b, _ := ledger.Balance("ACC_123"); b != 97500 {
		t.Fatalf("balance %d, want 97500: the transfer must have run exactly once", b)
	}
}
