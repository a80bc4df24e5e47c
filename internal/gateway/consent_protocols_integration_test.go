//go:build integration

package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// bankAgent is an a2a-go agent that fronts the demo server's transfer_funds
// tool: asked "transfer N from ACCOUNT to RECIPIENT", it calls the tool as
// an MCP client through warden's MCP listener, under its own API key. It
// presents a zero-trust token only if the A2A message carries one in its
// metadata (metaTokenKey); otherwise it calls without one, as an agent that
// holds the tool would. A refused call fails the task with warden's stage
// and rule in the status message.
type bankAgent struct {
	mcpURL, key string
}

// transferAsk is how a client asks the bank agent for a transfer.
var transferAsk = regexp.MustCompile(`transfer (\d+) from (\S+) to (\S+)`)

func (b bankAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		fail := func(why string) {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed,
				a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(why))), nil)
		}
		var ask strings.Builder
		for _, p := range ec.Message.Parts {
			ask.WriteString(p.Text())
		}
		m := transferAsk.FindStringSubmatch(ask.String())
		if m == nil {
			fail("not a transfer request")
			return
		}
		amount, _ := strconv.ParseInt(m[1], 10, 64)
		params := &mcp.CallToolParams{Name: "transfer_funds",
			Arguments: map[string]any{"account_id": m[2], "amount": amount, "recipient": m[3]}}
		if tok, _ := ec.Message.Metadata[gateway.MetaTokenKey].(string); tok != "" {
			params.Meta = mcp.Meta{gateway.MetaTokenKey: tok}
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "bank-agent", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.mcpURL,
			HTTPClient: &http.Client{Transport: bearer{b.key}}}, nil)
		if err != nil {
			fail("connecting to the bank's tools: " + err.Error())
			return
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, params)
		var werr *sdkjsonrpc.Error
		switch {
		case errors.As(err, &werr):
			var d struct{ Stage, Rule string }
			json.Unmarshal(werr.Data, &d)
			fail(fmt.Sprintf("transfer refused by %s/%s: %s", d.Stage, d.Rule, werr.Message))
		case err != nil:
			fail("transfer failed: " + err.Error())
		case res.IsError:
			fail("transfer failed: " + resultText(res))
		default:
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart(resultText(res))), nil) {
				return
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		}
	}
}

// resultText is the text content of a tool result.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (bankAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return echoAgent{}.Cancel(ctx, ec)
}

// TestConsentAcrossProtocols (AgentRFC CS, routing): consent cannot be
// bypassed by entering through another protocol. alice asks a bank agent,
// over A2A through warden, for a transfer that needs a zero-trust token; the
// agent performs it by calling transfer_funds through warden's MCP listener
// under its own identity. warden refuses that call exactly as it refuses
// alice's direct MCP call without a token (zero-trust/token-missing, same
// tool, same arguments hash), the task fails, and the ledger is untouched.
// With a token for exactly those arguments the same A2A request goes
// through once; the token's replay is refused. The policy keys on the
// operation (tool and arguments), not on the protocol it arrived by.
func TestConsentAcrossProtocols(t *testing.T) {
	ctx := testCtx(t)
	const aliceKey, bankKey = "wk_alice_0123456789abcdef", "wk_bank_fedcba9876543210"
	up, ledger := demoUpstream(t, false)
	dataDir := keyedDataDir(t)
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")

	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)

	agentURL := serveA2AAgent(t, bankAgent{mcpURL: srv.URL + "/mcp", key: bankKey}, a2a.AgentCard{Name: "bank", Description: "moves money",
		Skills: []a2a.AgentSkill{{ID: "transfer", Name: "transfer", Description: "transfer funds", Tags: []string{"bank"}}}}, nil)

	establishSQLite(t, dataDir)
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  auth: {api_keys: {alice: %s, bank: %s}}
  zero_trust: {public_url: %q, data_dir: %q}
  audit: {backend: jsonl, path: %q}
  upstreams: [{name: demo, url: %s, require_token: [transfer_funds]}]
  a2a: [{name: bank, url: %s}]
`, sha(aliceKey), sha(bankKey), srv.URL, dataDir, auditPath, up, agentURL))
	var once sync.Once
	stop := func() { once.Do(func() { g.Close() }) }
	t.Cleanup(stop)
	handler = g.Handler()

	const ask = "Please transfer 2500 from ACC_123 to vendor@example.com"
	args := map[string]any{"account_id": "ACC_123", "amount": 2500, "recipient": "vendor@example.com"}
	rawArgs, _ := json.Marshal(args)

	// sendA2A sends the bank agent alice's request over A2A through warden,
	// with token in the message metadata if not "", and returns the answer.
	sendA2A := func(token string) string {
		msg := map[string]any{"messageId": fmt.Sprint("m-", time.Now().UnixNano()), "role": "ROLE_USER",
			"parts": []any{map[string]any{"text": ask}}}
		if token != "" {
			msg["metadata"] = map[string]any{gateway.MetaTokenKey: token}
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
			"params": map[string]any{"message": msg}})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/a2a/bank", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("SendMessage through warden: HTTP %d %s", resp.StatusCode, raw)
		}
		return string(raw)
	}

	// 1. Over A2A: the agent's MCP call, without a token, is refused.
	if ans := sendA2A(""); !strings.Contains(ans, string(a2a.TaskStateFailed)) ||
		!strings.Contains(ans, "refused by zero-trust/token-missing") {
		t.Fatalf("the transfer asked over A2A: %s; want a failed task, refused by zero-trust/token-missing", ans)
	}
	if got := ledger.Transfers(); len(got) != 0 {
		t.Fatalf("the transfer asked over A2A ran without consent: %+v", got)
	}

	// 2. The same operation sent directly over MCP by alice, without a
	// token, is refused by the same stage and rule.
	alice, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{aliceKey}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = alice.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds", Arguments: args})
	if stage, rule := refusalOf(t, err); stage != "zero-trust" || rule != "token-missing" {
		t.Fatalf("the direct MCP call: refused by %s/%s, want zero-trust/token-missing", stage, rule)
	}
	alice.Close()

	// 3. Control: with a token for exactly these arguments, issued to the
	// caller warden sees (the bank agent), the A2A request goes through
	// once; the token's replay is refused.
	token, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: "bank", Upstream: "demo", Tool: "transfer_funds", Arguments: rawArgs})
	if err != nil {
		t.Fatal(err)
	}
	if ans := sendA2A(token); !strings.Contains(ans, string(a2a.TaskStateCompleted)) || !strings.Contains(ans, "txn-") {
		t.Fatalf("the consented transfer over A2A: %s; want a completed task with a transaction", ans)
	}
	if ans := sendA2A(token); !strings.Contains(ans, string(a2a.TaskStateFailed)) ||
		!strings.Contains(ans, "refused by zero-trust/INV-4") {
		t.Fatalf("the replayed token over A2A: %s; want a failed task, refused by zero-trust/INV-4", ans)
	}
	if got := ledger.Transfers(); len(got) != 1 {
		t.Fatalf("the ledger holds %d transfers, want exactly the consented one: %+v", len(got), got)
	}
	if b, _ := ledger.Balance("ACC_123"); b != 100000-2500 {
		t.Fatalf("balance %d, want %d", b, 100000-2500)
	}

	// The audit log: alice's A2A request, and the two refusals without a
	// token, one per protocol of entry, with the same stage, rule and
	// arguments hash.
	stop()
	var sends []audit.Record
	denied := map[string]audit.Record{} // actor → its tools/call refused for want of a token
	allowed := 0
	for _, r := range auditRecords(t, audit.KindJSONL, auditPath) {
		switch {
		case r.Upstream == "a2a:bank" && r.Method == "SendMessage" && r.Direction == "client":
			sends = append(sends, r)
		case r.Method == "tools/call" && r.Tool == "transfer_funds" && r.Direction == "client" &&
			r.Decision == audit.Deny && r.Rule == "token-missing":
			denied[r.Actor] = r
		case r.Method == "tools/call" && r.Tool == "transfer_funds" && r.Direction == "client" &&
			r.Decision == audit.Allow:
			allowed++
		}
	}
	if len(sends) != 3 || slices.ContainsFunc(sends, func(r audit.Record) bool { return r.Actor != "alice" }) {
		t.Errorf("audited A2A requests %+v: want alice's three SendMessage", sends)
	}
	viaA2A, direct := denied["bank"], denied["alice"]
	if viaA2A.Stage != "zero-trust" || direct.Stage != "zero-trust" {
		t.Fatalf("audited refusals: via A2A %+v, direct %+v; want both zero-trust/token-missing", viaA2A, direct)
	}
	if viaA2A.Upstream != "demo" || viaA2A.Upstream != direct.Upstream ||
		viaA2A.ParamsHash == "" || viaA2A.ParamsHash != direct.ParamsHash {
		t.Errorf("the two refusals are not of the same operation: via A2A %+v, direct %+v", viaA2A, direct)
	}
	if allowed != 1 {
		t.Errorf("audited %d allowed transfer_funds calls, want the one with a token", allowed)
	}
}
