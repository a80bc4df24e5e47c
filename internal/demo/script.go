package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/revoke"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// script is the client session the demo plays. Each step says what a user
// would expect, and the run fails loudly if the gateway does otherwise.
func (s *scene) script(ctx context.Context) error {
	// The client's user, alice, answers warden's approval questions
	// (MCP elicitation): she approves small transfers and leaves anything
	// else to the operator by dismissing the prompt.
	client := mcp.NewClient(&mcp.Implementation{Name: "warden-demo-client", Version: "1.0.0"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			s.mu.Lock()
			s.userSaw = req.Params.Message
			s.mu.Unlock()
			if strings.Contains(req.Params.Message, `"amount": 50,`) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "reason": "my rent"}}, nil
			}
			return &mcp.ElicitResult{Action: "cancel"}, nil
		},
	})
	endpoint, _ := url.Parse(s.url)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url,
		HTTPClient: &http.Client{Transport: proofTransport{scene: s, url: endpoint}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("demo client could not connect through the gateway: %w", err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list through the gateway: %w", err)
	}
	names := make([]string, 0, len(tools.Tools))
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	s.record(Step{Action: "initialize, tools/list", Outcome: "relayed",
		Detail: fmt.Sprintf("server %s %s (protocol %s), tools: %s", init.ServerInfo.Name, init.ServerInfo.Version,
			init.ProtocolVersion, strings.Join(names, ", "))})

	s.call(ctx, cs, "echo", map[string]any{"message": "hello through warden"}, "relayed")
	s.call(ctx, cs, "read_file", map[string]any{"path": "notes/plan.md"}, "relayed")
	s.call(ctx, cs, "read_file", map[string]any{"path": "../../etc/passwd"}, "refused")
	s.call(ctx, cs, "write_file", map[string]any{"path": "notes/todo.md", "content": "- review the ledger"}, "relayed")
	s.call(ctx, cs, "write_file", map[string]any{"path": "ledger/ACC_123.txt", "content": "account ACC_123, balance 1000000.00"}, "refused")
	s.call(ctx, cs, "get_env", map[string]any{}, "refused")
	s.call(ctx, cs, "Get_Env", map[string]any{}, "refused") // a look-alike of a denied tool
	// Zero-trust: transfer_funds runs only with a token bound to the exact
	// arguments, once.
	s.elicited(ctx, cs, 50)
	s.held(ctx, cs, 250, true)
	s.held(ctx, cs, 9999, false)
	approved := map[string]any{"account_id": "ACC_123", "amount": 1000, "recipient": "vendor@example.com"}
	token, err := s.issue("alice", "transfer_funds", `{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`)
	if err != nil {
		return err
	}
	s.callWith(ctx, cs, "transfer_funds with alice's token for exactly these arguments", "transfer_funds", approved, token, "relayed")
	s.hashes(`{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`,
		`{"recipient":"vendor@example.com","amount":1000.0,"account_id":"ACC_123"}`,
		`{"account_id":"ACC_123","amount":1001,"recipient":"vendor@example.com"}`)
	s.callWith(ctx, cs, "the same token again (replay)", "transfer_funds", approved, token, "refused")
	fresh, freshClaims, err := zerotrust.Issue(s.ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "demo", Tool: "transfer_funds",
		Arguments: []byte(`{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`)})
	if err != nil {
		return err
	}
	tampered := map[string]any{"account_id": "ACC_123", "amount": 1001, "recipient": "vendor@example.com"}
	s.callWith(ctx, cs, "a fresh token for 1000, presented with amount 1001", "transfer_funds", tampered, fresh, "refused")
	elsewhere, err := s.issueOn("billing", "alice", "transfer_funds", `{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`)
	if err != nil {
		return err
	}
	s.callWith(ctx, cs, "a token for exactly this transfer, approved for upstream billing", "transfer_funds", approved, elsewhere, "refused")
	// P8: the fresh token was refused above without being used; with its
	// own arguments it would pass, until it is revoked.
	if err := s.revoked.Revoke(ctx, revoke.Revocation{Kind: revoke.KindToken, ID: freshClaims.ID, By: "bob",
		Reason: "alice reported her device lost"}); err != nil {
		return err
	}
	s.callWith(ctx, cs, "that fresh token with exactly its arguments, after bob revoked it (warden token revoke --jti)",
		"transfer_funds", approved, fresh, "refused")
	if err := s.tiers(ctx, cs); err != nil {
		return err
	}
	if err := s.guards(ctx, cs); err != nil {
		return err
	}
	if err := s.a2aSteps(ctx, cs); err != nil {
		return err
	}

	// Raw HTTP: what a hostile or broken client might send.
	sid := cs.ID()
	s.raw(ctx, "a tools/call whose params repeat \"name\" (echo, then get_env)",
		`{"jsonrpc":"2.0","id":901,"method":"tools/call","params":{"name":"echo","name":"get_env","arguments":{}}}`, sid, "")
	s.raw(ctx, "a request spelled \"Method\" instead of \"method\"",
		`{"jsonrpc":"2.0","id":902,"Method":"tools/call","params":{"name":"get_env"}}`, sid, "")
	// Smuggling: bytes that warden and a lenient server (Go's encoding/json,
	// as in mcp-go) would read as different calls.
	s.raw(ctx, `a tools/call of echo that also carries "NAME": "get_env" (a case-insensitive server runs get_env)`,
		`{"jsonrpc":"2.0","id":905,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"NAME":"get_env"}}`, sid, "")
	s.raw(ctx, `a tools/call whose tool is in "Name", which only a case-insensitive server reads`,
		`{"jsonrpc":"2.0","id":906,"method":"tools/call","params":{"Name":"get_env","arguments":{}}}`, sid, "")
	s.raw(ctx, "transfer_funds sent as a notification (no id: nothing to answer, a server may still run it)",
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"transfer_funds","arguments":{"account_id":"ACC_123","amount":1,"recipient":"x"}}}`, sid, "")
	s.raw(ctx, "a request nested 100 levels deep",
		`{"jsonrpc":"2.0","id":903,"method":"tools/call","params":{"name":"echo","arguments":{"message":`+
			strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}}}`, sid, "")
	s.raw(ctx, "a POST from a web page at http://evil.example (DNS rebinding)",
		`{"jsonrpc":"2.0","id":904,"method":"tools/list"}`, sid, "evil.example")
	// Refused before any session exists, and on record all the same.
	if err := s.unknownSession(ctx); err != nil {
		return err
	}

	s.limits(ctx)

	s.expect(s.res.UpstreamSaw["get_env"] == 0, "get_env reached the demo server %d times", s.res.UpstreamSaw["get_env"])
	return nil
}

// hashes shows the zero-trust parameters_hash of the transfer: the same
// arguments in another order and spelling hash alike, a changed amount does
// not. Tokens bound to this hash, and approvals, come with issue 3.
func (s *scene) hashes(approved, reordered, tampered string) {
	h1, _, err1 := zerotrust.ParamsHash([]byte(approved))
	h2, _, err2 := zerotrust.ParamsHash([]byte(reordered))
	h3, _, err3 := zerotrust.ParamsHash([]byte(tampered))
	if err1 != nil || err2 != nil || err3 != nil {
		s.expect(false, "hashing the transfer's arguments: %v %v %v", err1, err2, err3)
		return
	}
	s.expect(h1 == h2 && h1 != h3, "parameters_hash does not bind the arguments")
	w := s.opts.Out
	fmt.Fprintf(w, "        parameters_hash of those arguments: %s\n", h1)
	fmt.Fprintf(w, "        the same arguments reordered, 1000.0 for 1000:  %s (same: an approval binds values, not spelling)\n", h2[:16]+"…")
	fmt.Fprintf(w, "        amount 1001 instead:                            %s (different: a token for 1000 cannot run 1001)\n", h3[:16]+"…")
}

// held makes a transfer without a token: the gateway holds it, and the
// demo plays the approver, who sees the exact arguments and their hash.
func (s *scene) held(ctx context.Context, cs *mcp.ClientSession, amount int, approve bool) {
	args := map[string]any{"account_id": "ACC_123", "amount": amount, "recipient": "vendor@example.com"}
	action := fmt.Sprintf("transfer_funds of %d without a token: held for approval", amount)
	done := make(chan struct{})
	var res *mcp.CallToolResult
	var err error
	go func() {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds", Arguments: args})
		close(done)
	}()
	var p approval.Pending
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if l := s.queue.List(); len(l) == 1 {
			p = l[0]
			break
		}
	}
	if p.ID == "" {
		s.expect(false, "%s: no call was held", action)
		<-done
		return
	}
	verdict, reason := "approves", "checked the recipient"
	if !approve {
		verdict, reason = "denies", "amount above the daily limit"
	}
	note := fmt.Sprintf("the approver sees %s %s, hash %s…, and %s it", p.Tool, p.Arguments, p.Hash[:16], verdict)
	if err := s.queue.Decide(p.ID, approve, "bob (demo approver)", reason); err != nil {
		s.expect(false, "%s: %v", action, err)
	}
	<-done
	want := "relayed"
	if !approve {
		want = "refused"
	}
	if err != nil {
		stage, rule, msg, ok := refusal(err)
		s.record(Step{Action: action, Outcome: "refused", By: stage + " (" + rule + ")", Detail: note + "\n        " + msg})
		s.expect(ok && want == "refused", "%s: %v", action, err)
		return
	}
	s.record(Step{Action: action, Outcome: "relayed", Detail: note + "\n        → " + summarize(res)})
	s.expect(want == "relayed", "%s was relayed, but should have been refused", action)
}

// elicited makes a transfer without a token that the client's own user
// approves: warden asks her through MCP elicitation, showing the exact
// arguments and the hash of the token it will issue.
func (s *scene) elicited(ctx context.Context, cs *mcp.ClientSession, amount int) {
	args := map[string]any{"account_id": "ACC_123", "amount": amount, "recipient": "landlord@example.com"}
	action := fmt.Sprintf("transfer_funds of %d without a token: held, and alice is asked in her client", amount)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds", Arguments: args})
	s.mu.Lock()
	saw := s.userSaw
	s.mu.Unlock()
	hash, _, _ := zerotrust.ParamsHash([]byte(fmt.Sprintf(`{"account_id":"ACC_123","amount":%d,"recipient":"landlord@example.com"}`, amount)))
	s.expect(strings.Contains(saw, hash), "alice was not shown the parameters_hash %s; she saw %q", hash, saw)
	note := "her client shows the tool, the arguments and parameters_hash " + hash[:16] + "… (MCP elicitation); she approves"
	if err != nil {
		stage, rule, msg, _ := refusal(err)
		s.record(Step{Action: action, Outcome: "refused", By: stage + " (" + rule + ")", Detail: note + "\n        " + msg})
		s.expect(false, "%s: %v", action, err)
		return
	}
	s.record(Step{Action: action, Outcome: "relayed", Detail: note + "\n        → " + summarize(res)})
}

// issue plays the platform provider: a token for sub to call tool with
// exactly args on the demo upstream.
func (s *scene) issue(sub, tool, args string) (string, error) {
	return s.issueOn("demo", sub, tool, args)
}

// issueOn is issue for another upstream: the token is valid there only.
func (s *scene) issueOn(upstream, sub, tool, args string) (string, error) {
	token, _, err := zerotrust.Issue(s.ring, zerotrust.IssueRequest{Sub: sub, Upstream: upstream, Tool: tool, Arguments: []byte(args)})
	return token, err
}

// call makes one tool call and records what happened.
func (s *scene) call(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any, want string) {
	argJSON, _ := json.Marshal(args)
	s.callWith(ctx, cs, fmt.Sprintf("tools/call %s %s", tool, argJSON), tool, args, "", want)
}

// callWith makes one tool call, with a zero-trust token when token is set,
// and records it under action.
func (s *scene) callWith(ctx context.Context, cs *mcp.ClientSession, action, tool string, args map[string]any, token, want string) {
	var meta mcp.Meta
	if token != "" {
		meta = mcp.Meta{gateway.MetaTokenKey: token}
	}
	s.callWithMeta(ctx, cs, action, tool, args, meta, want)
}

// callWithMeta is callWith with the whole params._meta given.
func (s *scene) callWithMeta(ctx context.Context, cs *mcp.ClientSession, action, tool string, args map[string]any, meta mcp.Meta, want string) {
	p := &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta}
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		stage, rule, msg, ok := refusal(err)
		if !ok {
			s.record(Step{Action: action, Outcome: "relayed", Detail: "error: " + err.Error()})
			s.expect(false, "%s: unexpected error %v", action, err)
			return
		}
		s.record(Step{Action: action, Outcome: "refused", By: stage + " (" + rule + ")", Detail: msg})
		s.expect(want == "refused", "%s was refused by %s, but should have been relayed", action, stage)
		return
	}
	s.record(Step{Action: action, Outcome: "relayed", Detail: "→ " + summarize(res)})
	s.expect(want == "relayed", "%s was relayed, but should have been refused", action)
}

// raw posts body to the gateway with plain HTTP and records the refusal.
func (s *scene) raw(ctx context.Context, what, body, session, host string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if host != "" {
		req.Host = host
		req.Header.Set("Origin", "http://"+host)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.record(Step{Action: what, Outcome: "relayed", Detail: "error: " + err.Error()})
		s.expect(false, "%s: %v", what, err)
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var reply struct {
		Error *struct {
			Message string `json:"message"`
			Data    struct {
				Stage string `json:"stage"`
				Rule  string `json:"rule"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &reply) != nil || reply.Error == nil {
		s.record(Step{Action: what, Outcome: "relayed", Detail: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, firstLine(data))})
		s.expect(false, "%s was not refused (HTTP %d)", what, resp.StatusCode)
		return
	}
	s.record(Step{Action: what, Outcome: "refused", By: reply.Error.Data.Stage + " (" + reply.Error.Data.Rule + ")",
		Detail: firstLine([]byte(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, reply.Error.Message)))})
}

// summarize renders a tool result in one short line.
func summarize(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	text := firstLine([]byte(strings.Join(parts, " ")))
	if res.IsError {
		return "the server refused: " + text
	}
	return text
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > 110 {
		s = s[:110] + " …"
	}
	return s
}
