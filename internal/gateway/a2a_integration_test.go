//go:build integration

package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/audit"
)

type echoAgent struct{}

func (echoAgent) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (echoAgent) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// serveA2AAgent serves exec on a loopback server with a2a-go's JSON-RPC
// handler at /a2a (through wrap, if set) and card, pointed at it, at the
// well-known path; it returns the agent's /a2a URL.
func serveA2AAgent(t *testing.T, exec a2asrv.AgentExecutor, card a2a.AgentCard, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var agentURL string
	rpc := http.Handler(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(exec)))
	if wrap != nil {
		rpc = wrap(rpc)
	}
	mux := http.NewServeMux()
	mux.Handle("/a2a", rpc)
	mux.HandleFunc("/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		c := card
		c.Version = "1.0.0"
		c.SupportedInterfaces = []*a2a.AgentInterface{a2a.NewAgentInterface(agentURL, a2a.TransportProtocolJSONRPC)}
		c.DefaultInputModes, c.DefaultOutputModes = []string{"text/plain"}, []string{"text/plain"}
		json.NewEncoder(w).Encode(&c)
	})
	agent := httptest.NewServer(mux)
	t.Cleanup(agent.Close)
	agentURL = agent.URL + "/a2a"
	return agentURL
}

// TestA2AAndMCPThroughOneWarden: an a2a-go agent and the MCP demo server
// behind one gateway. The agent's card is served rewritten to point at
// warden; A2A requests are relayed and a malformed one is refused before the
// agent sees it; both protocols are audited in one hash chain.
func TestA2AAndMCPThroughOneWarden(t *testing.T) {
	ctx := testCtx(t)
	var hits atomic.Int64
	agentURL := serveA2AAgent(t, echoAgent{}, a2a.AgentCard{Name: "echo", Description: "echoes",
		Skills: []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echo", Tags: []string{"echo"}}}},
		func(rpc http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); rpc.ServeHTTP(w, r) })
		})

	up, _ := demoUpstream(t, false)
	auditPath := filepath.Join(t.TempDir(), "audit.db")
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust: {public_url: %q}
  audit: {path: %q}
  upstreams: [{name: demo, url: %s}]
  a2a: [{name: echo, url: %s}]
`, srv.URL, auditPath, up, agentURL))
	handler = g.Handler()
	closed := false
	t.Cleanup(func() {
		if !closed {
			g.Close()
		}
	})

	// The card points clients at warden, not at the agent.
	resp, err := http.Get(srv.URL + "/a2a/echo/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card map[string]any
	json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	raw, _ := json.Marshal(card)
	if !strings.Contains(string(raw), srv.URL+"/a2a/echo") || strings.Contains(string(raw), agentURL) {
		t.Fatalf("served card: %s", raw)
	}

	send := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/a2a/echo", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	msg := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`
	if code, body := send(msg); code != 200 || !strings.Contains(body, "TASK_STATE_COMPLETED") && !strings.Contains(body, "completed") {
		t.Fatalf("SendMessage through warden: %d %s", code, body)
	}
	before := hits.Load()
	dup := `{"jsonrpc":"2.0","id":2,"method":"SendMessage","method":"CancelTask","params":{}}`
	if _, body := send(dup); !strings.Contains(body, "duplicate") {
		t.Fatalf("a duplicate-key request: %s", body)
	}
	if hits.Load() != before {
		t.Fatal("the agent received a request warden could not validate")
	}

	// MCP through the same warden.
	cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, "2025-11-25")
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	g.Close()
	closed = true

	l, err := audit.Open(context.Background(), audit.KindAuto, auditPath, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rep, err := l.Verify(context.Background()); err != nil || rep.Problem != nil {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	var sb strings.Builder
	l.Export(context.Background(), &sb)
	for _, want := range []string{`"upstream":"a2a:echo","method":"SendMessage"`, `"decision":"deny"`, `"upstream":"demo","method":"tools/call"`} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("the audit log lacks %s:\n%s", want, sb.String())
		}
	}
}
