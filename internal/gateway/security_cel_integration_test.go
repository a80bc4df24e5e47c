//go:build integration

package gateway_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/demoserver"
)

// TestSecurityCELRules runs CEL rules of gateway.security.rules through
// the whole pipeline, from the configuration file to the demo server: a
// tools/call an event rule matches is refused with the rule's name, one it
// cannot evaluate is refused too (fail-secure), and the string of a tool
// result a string rule matches is quarantined. Without the rules every
// one of these calls goes through untouched.
func TestSecurityCELRules(t *testing.T) {
	const rules = `
    rules:
      - name: big-transfer
        category: privilege_escalation
        when: kind == "tool_call" && tool == "transfer_funds" && arguments.amount > 1000
      - name: magic-word
        category: prompt_injection
        when: kind == "tool_result" && content.contains("xyzzy")`
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("rules=%v", on), func(t *testing.T) {
			ctx := testCtx(t)
			server := demoserver.New(demoserver.Options{Root: t.TempDir()})
			up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
			t.Cleanup(up.Close)
			yaml := "version: 1\ngateway:\n  security:\n    prompt_injection: quarantine"
			if on {
				yaml += rules
			}
			yaml += fmt.Sprintf("\n  upstreams: [{name: demo, url: %s}]\n", up.URL)
			g := gatewayFromYAML(t, yaml)
			srv := httptest.NewServer(g.Handler())
			t.Cleanup(func() { srv.Close(); g.Close() })
			cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, "2025-11-25")
			call := func(name string, args map[string]any) (*mcp.CallToolResult, error) {
				return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			}
			refused := func(err error) (stage, rule, msg string) {
				var werr *sdkjsonrpc.Error
				if !errors.As(err, &werr) {
					return "", "", fmt.Sprint(err)
				}
				var d struct{ Stage, Rule string }
				_ = jsonUnmarshal(werr.Data, &d)
				return d.Stage, d.Rule, werr.Message
			}
			transfer := map[string]any{"account_id": "acct-1", "recipient": "bob", "amount": 5000}

			// A small transfer passes either way.
			if _, err := call("transfer_funds", map[string]any{"account_id": "acct-1", "recipient": "bob", "amount": 50}); err != nil {
				t.Fatalf("a small transfer: %v", err)
			}
			_, err := call("transfer_funds", transfer)
			stage, rule, msg := refused(err)
			if on && (stage != "security" || rule != "custom/big-transfer") {
				t.Fatalf("a big transfer: refusal %q/%q (%s), want security/custom/big-transfer", stage, rule, msg)
			}
			if !on && err != nil {
				t.Fatalf("without the rules, a big transfer is refused: %v", err)
			}

			// No amount: the rule cannot be evaluated, and the call is
			// refused before the server sees it.
			res, err := call("transfer_funds", map[string]any{"account_id": "acct-1", "recipient": "bob"})
			stage, rule, msg = refused(err)
			if on && (stage != "security" || rule != "custom/big-transfer" || !strings.Contains(msg, "could not be evaluated")) {
				t.Fatalf("a transfer without an amount: refusal %q/%q (%s), want security/custom/big-transfer, not evaluated", stage, rule, msg)
			}
			if !on && (err != nil || !res.IsError) {
				t.Fatalf("without the rules, the server should answer the missing amount itself: %v %+v", err, res)
			}

			// The answer holding the word is quarantined; the others pass.
			res, err = call("echo", map[string]any{"message": "say xyzzy"})
			if err != nil {
				t.Fatal(err)
			}
			got := text(t, res)
			if on && (strings.Contains(got, "xyzzy") || !strings.Contains(got, "[warden: quarantined ") || !strings.Contains(got, "custom/magic-word")) {
				t.Fatalf("echo of the word: %q, want it quarantined by custom/magic-word", got)
			}
			if !on && got != "Echo: say xyzzy" {
				t.Fatalf("without the rules: %q", got)
			}
			if res, err := call("echo", map[string]any{"message": "hello"}); err != nil || text(t, res) != "Echo: hello" {
				t.Fatalf("a plain echo: %v %v", err, res)
			}
		})
	}
}
