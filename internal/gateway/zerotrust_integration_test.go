//go:build integration

package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/testenv"
	"github.com/agentwarden/warden/internal/zerotrust"
	"github.com/agentwarden/warden/internal/zerotrust/dpop"
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
	establishSQLite(t, dataDir)
	yaml := fmt.Sprintf(`version: 1
gateway:
  zero_trust: {data_dir: %q, subject: alice}
  upstreams:
    - name: demo
      url: %s
      require_token: [transfer_funds]
`, dataDir, up)
	start := func() (*mcp.ClientSession, func()) {
		g := gatewayFromYAML(t, yaml)
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
	token, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "demo", Tool: "transfer_funds",
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

// TestZeroTrustDPoPOverHTTP: a DPoP-bound token through the real listener.
// The proof travels in the DPoP header; the stolen token with the thief's
// own proof is refused, the owner's proof works once.
func TestZeroTrustDPoPOverHTTP(t *testing.T) {
	dataDir := t.TempDir()
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		t.Fatal(err)
	}
	up, ledger := demoUpstream(t, false)
	// The listener's address must be known before the configuration names
	// it as public_url, so build the server around a handler set later.
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer srv.Close()
	establishSQLite(t, dataDir)
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust: {data_dir: %q, subject: alice, require_dpop: true, public_url: %q}
  upstreams:
    - name: demo
      url: %s
      require_token: [transfer_funds]
`, dataDir, srv.URL, up))
	defer g.Close()
	handler = g.Handler()
	endpoint := srv.URL + "/mcp"

	// The public signing keys are served for upstreams that verify tokens.
	resp, err := http.Get(srv.URL + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	var jwks struct{ Keys []map[string]any }
	json.NewDecoder(resp.Body).Decode(&jwks)
	resp.Body.Close()
	if len(jwks.Keys) != 1 || jwks.Keys[0]["d"] != nil || jwks.Keys[0]["kid"] == nil {
		t.Fatalf("JWKS %+v: want one public key with its kid", jwks)
	}

	var post func(body, session, proof string) []byte
	post = func(body, session, proof string) []byte {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		if proof != "" {
			req.Header.Set("DPoP", proof)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" && session == "" {
			post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, s, "")
			return []byte(s)
		}
		return readReply(t, resp)
	}
	session := string(post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "", ""))

	key := func() (*ecdsa.PrivateKey, string) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		jkt, _ := dpop.Thumbprint(&jose.JSONWebKey{Key: &k.PublicKey})
		return k, jkt
	}
	aliceKey, aliceJKT := key()
	thiefKey, _ := key()
	args := `{"account_id":"ACC_123","amount":2500,"recipient":"vendor@example.com"}`
	token, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "demo", Tool: "transfer_funds", Arguments: []byte(args), DPoPJKT: aliceJKT})
	if err != nil {
		t.Fatal(err)
	}
	proof := func(k *ecdsa.PrivateKey) string {
		u, _ := url.Parse(endpoint)
		p, err := dpop.NewProof(k, dpop.Request{Method: "POST", URL: u, AccessToken: token}, rand.Text(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	body := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"transfer_funds","arguments":` + args +
			`,"_meta":{"` + gateway.MetaTokenKey + `":"` + token + `"}}}`
	}
	if got := post(body("1"), session, proof(thiefKey)); !strings.Contains(string(got), `"rule":"INV-5"`) {
		t.Fatalf("stolen token with the thief's proof: %s", got)
	}
	if got := post(body("2"), session, ""); !strings.Contains(string(got), `"rule":"INV-5"`) {
		t.Fatalf("bound token without a proof: %s", got)
	}
	if got := post(body("3"), session, proof(aliceKey)); !strings.Contains(string(got), "txn-0001") {
		t.Fatalf("alice's own proof: %s", got)
	}
	if got := post(body("4"), session, proof(aliceKey)); !strings.Contains(string(got), `"stage":"zero-trust"`) {
		t.Fatalf("the token again, with a fresh proof: %s", got)
	}
	if b, _ := ledger.Balance("ACC_123"); b != 97500 {
		t.Fatalf("balance %d, want one transfer of 2500", b)
	}
}

// TestMandateThroughTheGateway: binding mode B. A call matching a mandate in
// the configuration runs without a client token; the same tool with other
// arguments is refused.
func TestMandateThroughTheGateway(t *testing.T) {
	ctx := testCtx(t)
	dataDir := t.TempDir()
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		t.Fatal(err)
	}
	up, ledger := demoUpstream(t, false)
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust: {data_dir: %q, subject: payroll-bot, store: memory}
  upstreams:
    - name: demo
      url: %s
      require_token: [transfer_funds]
      mandates:
        - tool: transfer_funds
          arguments: '{"recipient":"payroll@example.com","amount":5000,"account_id":"ACC_123"}'
`, dataDir, up))
	srv := httptest.NewServer(g.Handler())
	// Registered before connect's, so it runs after the client session
	// closes: httptest.Server.Close waits for open streams.
	t.Cleanup(func() { srv.Close(); g.Close() })
	cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, "2025-11-25")

	// Key order and number spelling do not matter: the hash does.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds",
		Arguments: map[string]any{"account_id": "ACC_123", "amount": 5000.0, "recipient": "payroll@example.com"}})
	if err != nil || res.IsError {
		t.Fatalf("the mandated call: %v %v", res, err)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds",
		Arguments: map[string]any{"account_id": "ACC_123", "amount": 5001, "recipient": "payroll@example.com"}})
	if wardenRefusal(t, err) != "zero-trust" {
		t.Fatal("a call outside the mandate ran without a token")
	}
	if b, _ := ledger.Balance("ACC_123"); b != 95000 {
		t.Fatalf("balance %d, want only the mandated 5000 moved", b)
	}
}

// TestApprovalByElicitationThroughTheGateway: the held call's user is asked
// through MCP elicitation, by a real go-sdk client over streamable HTTP, on
// every stateful revision that has elicitation. The user sees the exact
// arguments; approving runs the call once, declining refuses it.
func TestApprovalByElicitationThroughTheGateway(t *testing.T) {
	for _, revision := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(revision, func(t *testing.T) {
			ctx := testCtx(t)
			dataDir := t.TempDir()
			if ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir)); err != nil {
				t.Fatal(err)
			} else if _, err := ring.Rotate("EdDSA"); err != nil {
				t.Fatal(err)
			}
			up, ledger := demoUpstream(t, false)
			g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust: {data_dir: %q, subject: alice, store: memory, hold_for_approval: true, approval_channels: [elicitation]}
  upstreams:
    - name: demo
      url: %s
      require_token: [transfer_funds]
`, dataDir, up))
			srv := httptest.NewServer(g.Handler())
			t.Cleanup(func() { srv.Close(); g.Close() })

			var asked []string
			client := mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					// The user approves small transfers only.
					approve := strings.Contains(req.Params.Message, `"amount": 2500`)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": approve}}, nil
				},
			})
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"},
				&mcp.ClientSessionOptions{ProtocolVersion: revision})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			transfer := func(amount int) error {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds",
					Arguments: map[string]any{"account_id": "ACC_123", "amount": amount, "recipient": "vendor@example.com"}})
				if err == nil && res.IsError {
					err = fmt.Errorf("tool error: %v", text(t, res))
				}
				return err
			}
			if err := transfer(2500); err != nil {
				t.Fatalf("the approved call: %v", err)
			}
			if err := transfer(900000); wardenRefusal(t, err) != "zero-trust" {
				t.Fatalf("the declined call: %v", err)
			}
			if len(asked) != 2 || !strings.Contains(asked[0], "parameters_hash: ") {
				t.Fatalf("the user was asked %d times: %q", len(asked), asked)
			}
			if b, _ := ledger.Balance("ACC_123"); b != 97500 {
				t.Fatalf("balance %d, want only the approved 2500 moved", b)
			}
		})
	}
}

// TestClassificationThroughTheGateway: CEL rules in the configuration pick
// each call's tier, with no require_* list: a small transfer needs a token
// (Tier 1), a big one also DPoP (Tier 2), and an unclassified tool nothing.
func TestClassificationThroughTheGateway(t *testing.T) {
	ctx := testCtx(t)
	dataDir := t.TempDir()
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		t.Fatal(err)
	}
	up, ledger := demoUpstream(t, false)
	establishSQLite(t, dataDir)
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust:
    data_dir: %q
    subject: alice
    classification:
      - {name: transfer, level: 4, when: 'tool.name == "transfer_funds"'}
      - {name: big-transfer, level: 2, when: 'tool.name == "transfer_funds" && args.amount > 10000'}
  audit: {}
  upstreams:
    - name: demo
      url: %s
`, dataDir, up))
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, "2025-11-25")

	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil || res.IsError {
		t.Fatalf("unclassified echo: %v %v", res, err)
	}
	transfer := func(amount int, withToken bool) error {
		args := fmt.Sprintf(`{"account_id":"ACC_123","amount":%d,"recipient":"vendor@example.com"}`, amount)
		p := &mcp.CallToolParams{Name: "transfer_funds", Arguments: json.RawMessage(args)}
		if withToken {
			token, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "demo", Tool: "transfer_funds", Arguments: []byte(args)})
			if err != nil {
				t.Fatal(err)
			}
			p.Meta = mcp.Meta{gateway.MetaTokenKey: token}
		}
		_, err := cs.CallTool(ctx, p)
		return err
	}
	if err := transfer(2500, false); wardenRefusal(t, err) != "zero-trust" {
		t.Fatalf("Tier 1 without a token: %v", err)
	}
	if err := transfer(2500, true); err != nil {
		t.Fatalf("Tier 1 with a token: %v", err)
	}
	err = transfer(20000, true)
	if wardenRefusal(t, err) != "zero-trust" || !strings.Contains(err.Error(), "Tier 2") {
		t.Fatalf("Tier 2 with a token but no DPoP: %v", err)
	}
	if b, _ := ledger.Balance("ACC_123"); b != 97500 {
		t.Fatalf("balance %d, want only the Tier 1 transfer of 2500", b)
	}
}

// TestAuthorizeThenCallOverHTTP: a client obtains a DPoP-bound token from
// warden's authorization API for a mandated Tier 2 call, then presents it in
// the Warden-Invocation header with a fresh proof. The demo server runs the
// transfer once; a thief holding the token but not the key gets nothing.
func TestAuthorizeThenCallOverHTTP(t *testing.T) {
	dataDir := t.TempDir()
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		t.Fatal(err)
	}
	up, ledger := demoUpstream(t, false)
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer srv.Close()
	args := `{"account_id":"ACC_123","amount":2500,"recipient":"vendor@example.com"}`
	establishSQLite(t, dataDir)
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust:
    data_dir: %q
    subject: alice
    public_url: %q
    classification:
      - {name: transfers, level: 3, when: 'tool.name == "transfer_funds"'}
  audit: {}
  upstreams:
    - name: demo
      url: %s
      mandates:
        - {tool: transfer_funds, arguments: '%s'}
`, dataDir, srv.URL, up, args))
	defer g.Close()
	handler = g.Handler()

	aliceKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	aliceJKT, _ := dpop.Thumbprint(&jose.JSONWebKey{Key: &aliceKey.PublicKey})
	proof := func(k *ecdsa.PrivateKey, rawURL, token string) string {
		u, _ := url.Parse(rawURL)
		p, err := dpop.NewProof(k, dpop.Request{Method: "POST", URL: u, AccessToken: token}, rand.Text(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+gateway.AuthorizePath,
		strings.NewReader(`{"tool":"transfer_funds","arguments":`+args+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("DPoP", proof(aliceKey, srv.URL+gateway.AuthorizePath, ""))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var grant gateway.AuthorizeResponse
	json.NewDecoder(resp.Body).Decode(&grant)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || grant.JKT != aliceJKT || grant.BindingMode != "pre-defined" || grant.Tier != 2 {
		t.Fatalf("authorize: %d %+v", resp.StatusCode, grant)
	}

	endpoint := srv.URL + "/mcp"
	post := func(body, session string, hdr map[string]string) (string, []byte) {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.Header.Get("Mcp-Session-Id"), readReply(t, resp)
	}
	session, _ := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "", nil)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session, nil)
	call := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"transfer_funds","arguments":` + args + `}}`
	}
	thief, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if _, got := post(call("1"), session, map[string]string{gateway.HeaderToken: grant.Token, "DPoP": proof(thief, endpoint, grant.Token)}); !strings.Contains(string(got), `"rule":"INV-5"`) {
		t.Fatalf("the token with a thief's proof: %s", got)
	}
	if _, got := post(call("2"), session, map[string]string{gateway.HeaderToken: grant.Token, "DPoP": proof(aliceKey, endpoint, grant.Token)}); !strings.Contains(string(got), "txn-0001") {
		t.Fatalf("alice's call with her granted token: %s", got)
	}
	if _, got := post(call("3"), session, map[string]string{gateway.HeaderToken: grant.Token, "DPoP": proof(aliceKey, endpoint, grant.Token)}); !strings.Contains(string(got), `"rule":"INV-4"`) {
		t.Fatalf("the granted token again: %s", got)
	}
	if b, _ := ledger.Balance("ACC_123"); b != 97500 {
		t.Fatalf("balance %d, want one transfer of 2500", b)
	}
}

// TestRedisRestartThroughTheGateway (issue 3, issue 9): replay protection
// on a real redis-server. With AOF, a restart keeps the used ids; a server
// that comes back empty starts a new epoch, and no token issued before it is
// accepted, though the server no longer knows its id.
func TestRedisRestartThroughTheGateway(t *testing.T) {
	for _, aof := range []bool{true, false} {
		t.Run(fmt.Sprintf("aof=%v", aof), func(t *testing.T) {
			ctx := testCtx(t)
			rd := testenv.StartRedis(t, aof)
			dataDir := t.TempDir()
			ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir))
			if err == nil {
				_, err = ring.Rotate("EdDSA")
			}
			if err != nil {
				t.Fatal(err)
			}
			up, ledger := demoUpstream(t, false)
			establishRedis(t, rd.URL)
			g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust: {data_dir: %q, subject: alice, store: redis, redis_url: %q, skew: 1s}
  upstreams:
    - name: demo
      url: %s
      require_token: [transfer_funds]
`, dataDir, rd.URL, up))
			srv := httptest.NewServer(g.Handler())
			t.Cleanup(func() { srv.Close(); g.Close() })
			cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, "2025-11-25")
			args := `{"account_id":"ACC_123","amount":10,"recipient":"vendor@example.com"}`
			issue := func() string {
				tok, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "demo", Tool: "transfer_funds", Arguments: []byte(args)})
				if err != nil {
					t.Fatal(err)
				}
				return tok
			}
			call := func(tok string) error {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds", Arguments: json.RawMessage(args),
					Meta: mcp.Meta{gateway.MetaTokenKey: tok}})
				return err
			}
			used, unused := issue(), issue()
			if err := call(used); err != nil {
				t.Fatal(err)
			}
			// Both tokens were issued in this second; the restart must come
			// in a later one for the epoch to be after them.
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
			rd.Kill()
			if err := call(issue()); wardenRefusal(t, err) != "zero-trust" {
				t.Fatalf("a call while Redis is down: %v", err)
			}
			rd.Start(t)
			err = call(used)
			if wardenRefusal(t, err) != "zero-trust" {
				t.Fatalf("the used token after the restart was accepted: %v", err)
			}
			err = call(unused)
			if aof {
				if err != nil {
					t.Fatalf("with AOF, an unused token issued before the restart: %v", err)
				}
			} else if wardenRefusal(t, err) != "zero-trust" || !strings.Contains(err.Error(), "epoch") {
				t.Fatalf("after an empty restart, a token from before it: %v", err)
			}
			if !aof {
				// The new epoch refuses, for the skew, tokens that may
				// predate it: a fresh one too, at first.
				if err := call(issue()); wardenRefusal(t, err) != "zero-trust" || !strings.Contains(err.Error(), "epoch") {
					t.Fatalf("a token issued the moment the data was lost: %v", err)
				}
				time.Sleep(time.Until(time.Now().Add(time.Second).Truncate(time.Second).Add(time.Second)))
			}
			if err := call(issue()); err != nil {
				t.Fatalf("a fresh token after the restart: %v", err)
			}
			want := int64(100000 - 10*3)
			if !aof {
				want = 100000 - 10*2
			}
			if b, _ := ledger.Balance("ACC_123"); b != want {
				t.Fatalf("balance %d, want %d", b, want)
			}
		})
	}
}
