//go:build integration

package gateway_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// TestZeroTrustThroughStdioGateway: a go-sdk client talks to a real
// `warden gateway --stdio --config FILE --require-token transfer_funds --
// warden demo-server` child, the way a desktop client would, and presents
// its token in params._meta (there are no headers on stdio). The valid token
// moves money once; the same token again is a replay (INV-4); no token is
// refused before the demo server sees the call.
func TestZeroTrustThroughStdioGateway(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		t.Fatal(err)
	}
	// The command after --stdio is the one upstream, so the file needs
	// none: it contributes gateway.zero_trust (keys, subject, the SQLite
	// store).
	cfgFile := filepath.Join(dir, "warden.yaml")
	if err := os.WriteFile(cfgFile, []byte(fmt.Sprintf(`version: 1
gateway:
  zero_trust: {data_dir: %q, subject: alice}
`, dataDir)), 0o600); err != nil {
		t.Fatal(err)
	}
	establishSQLite(t, dataDir)
	tr := stdioGateway(os.Environ(), []string{"--config", cfgFile, "--require-token", "transfer_funds"},
		wardenBin, "demo-server", "--root", t.TempDir())
	cs, _ := connect(t, ctx, tr, "2025-11-25")

	args := map[string]any{"account_id": "ACC_123", "amount": 2500, "recipient": "vendor@example.com"}
	transfer := func(token string) (*mcp.CallToolResult, error) {
		p := &mcp.CallToolParams{Name: "transfer_funds", Arguments: args}
		if token != "" {
			p.Meta = mcp.Meta{gateway.MetaTokenKey: token}
		}
		return cs.CallTool(ctx, p)
	}
	issue := func() string {
		t.Helper()
		tok, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "stdio", Tool: "transfer_funds",
			Arguments: []byte(`{"recipient":"vendor@example.com","amount":2500,"account_id":"ACC_123"}`)})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	// refusal returns the zero-trust detail of a warden refusal.
	refusal := func(what string, err error) (rule, invariant string) {
		t.Helper()
		var werr *sdkjsonrpc.Error
		if !errors.As(err, &werr) {
			t.Fatalf("%s: want a JSON-RPC error from warden, got %v", what, err)
		}
		var d struct{ Stage, Rule, Invariant string }
		if err := json.Unmarshal(werr.Data, &d); err != nil || d.Stage != "zero-trust" {
			t.Fatalf("%s: refused by %q, want the zero-trust stage: %v %s", what, d.Stage, werr, werr.Data)
		}
		return d.Rule, d.Invariant
	}

	// Tools without require_token pass through untouched.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil || res.IsError || text(t, res) != "Echo: hi" {
		t.Fatalf("echo, which needs no token: %v %v", res, err)
	}

	res, err := transfer("")
	if err == nil {
		t.Fatalf("a transfer without a token went through: %s", text(t, res))
	}
	refusal("no token", err)

	token := issue()
	res, err = transfer(token)
	if err != nil || res.IsError || !strings.Contains(text(t, res), "txn-0001") {
		t.Fatalf("the approved call, token in params._meta: %v %v; want txn-0001", res, err)
	}
	res, err = transfer(token)
	if err == nil {
		t.Fatalf("the replayed token moved money again: %s", text(t, res))
	}
	if _, inv := refusal("replay", err); inv != "INV-4" {
		t.Errorf("the replay was refused for %q, want INV-4 (single use)", inv)
	}

	// The demo server ran exactly one transfer: the next one, with a fresh
	// token, is its second.
	res, err = transfer(issue())
	if err != nil || res.IsError || !strings.Contains(text(t, res), "txn-0002") {
		t.Fatalf("a fresh token: %v %v; want txn-0002, the server's second transfer", res, err)
	}
}

// TestStdioGatewayRefusesDroppedTokenRequirement: --stdio replaces the
// configuration's upstreams, so a file whose upstream lists require_token is
// refused instead of serving that tool without tokens.
func TestStdioGatewayRefusesDroppedTokenRequirement(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "warden.yaml")
	os.WriteFile(cfgFile, []byte(fmt.Sprintf(`version: 1
gateway:
  zero_trust: {data_dir: %q, subject: alice}
  upstreams:
    - name: demo
      command: [%q, demo-server]
      require_token: [transfer_funds]
`, filepath.Join(dir, "data"), wardenBin)), 0o600)
	cmd := exec.Command(wardenBin, "gateway", "--stdio", "--config", cfgFile, "--", wardenBin, "demo-server", "--root", dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(out), "--require-token") {
		t.Fatalf("warden gateway --stdio with a require_token it would drop: %v\n%s\nwant exit 3 pointing at --require-token", err, out)
	}
}
