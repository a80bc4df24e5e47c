//go:build integration

package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConsentOnEveryRoute (AgentRFC CS, routing): the policy keys on the
// operation (the upstream's tool), not on how the call arrives. A tool that
// needs a token is refused without one on the default path, on the
// upstream's own path, over the stateless 2026-07-28 revision, and through
// the authorization API; the server never runs it.
func TestConsentOnEveryRoute(t *testing.T) {
	ctx := testCtx(t)
	up, ledger := demoUpstream(t, true) // stateless-capable, so every revision reaches it
	base := startGateway(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust: {data_dir: %q, store: memory, subject: alice}
  upstreams: [{name: demo, url: %s, require_token: [transfer_funds]}]
`, keyedDataDir(t), up))
	args := map[string]any{"account_id": "ACC_123", "amount": 10, "recipient": "vendor@example.com"}
	for _, route := range []struct{ name, url, revision string }{
		{"default path", base, "2025-11-25"},
		{"upstream path", base + "/demo", "2025-11-25"},
		{"stateless revision", base, "2026-07-28"},
		{"stateless on the upstream path", base + "/demo", "2026-07-28"},
	} {
		cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: route.url}, route.revision)
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds", Arguments: args})
		if stage := wardenRefusal(t, err); stage != "zero-trust" {
			t.Errorf("%s: refused by %q, want zero-trust", route.name, stage)
		}
		cs.Close()
	}
	// The authorization API is another way to the same operation: without a
	// mandate or a person to approve, it issues nothing.
	origin := strings.TrimSuffix(base, "/mcp")
	body, _ := json.Marshal(map[string]any{"upstream": "demo", "tool": "transfer_funds", "arguments": args})
	resp, err := http.Post(origin+"/warden/v1/authorize", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	var ans struct {
		Token string `json:"token"`
		Error struct {
			Data struct{ Stage, Rule string } `json:"data"`
		} `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	if ans.Token != "" || ans.Error.Data.Stage != "zero-trust" {
		t.Errorf("authorize: HTTP %d, token %q, refusal %+v; want no token, refused by zero-trust", resp.StatusCode, ans.Token, ans.Error.Data)
	}
	if b, _ := ledger.Balance("ACC_123"); b != 100000 {
		t.Fatalf("balance %d: a route ran the transfer without consent", b)
	}
}
