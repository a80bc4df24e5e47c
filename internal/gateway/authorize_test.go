package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/policy"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/transport"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// authorizeFixture is a gateway whose only upstream needs tokens for
// transfer_funds (Tier 2 above 10000) and denies get_env. Nothing dials the
// upstream: the authorization API issues tokens without calling tools.
type authorizeFixture struct {
	srv   *httptest.Server
	queue *approval.Queue
	ring  *zerotrust.KeyRing
}

func newAuthorizeFixture(t *testing.T) *authorizeFixture {
	t.Helper()
	f := newZT(t, nil)
	q := approval.New(time.Minute)
	f.stage.Approvals, f.stage.Signer, f.stage.AdminApproval = q, f.ring, true
	c, err := policy.NewClassifier([]policy.Rule{{Name: "big", Level: 2, When: `tool.name == "transfer_funds" && args.amount > 10000`}})
	if err != nil {
		t.Fatal(err)
	}
	getEnv, _ := config.CompilePattern("get_env")
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	st := store.NewMemory()
	t.Cleanup(func() { st.Close() })
	g, err := New(Options{
		Upstreams: []Upstream{{Name: "pay", Dial: func(context.Context, bool) (transport.Conn, error) {
			t.Error("the authorization API dialled the upstream")
			return nil, io.EOF
		}, Pipeline: NewPipeline(ToolPolicy{List: config.List{Deny: []config.Pattern{getEnv}}},
			Classify{Classifier: c, Subject: f.stage.Subject}, f.stage)}},
		Authorize:    true,
		AuthorizeURL: authorizeURL(srv.URL),
		ProofStore:   st,
	})
	if err != nil {
		t.Fatal(err)
	}
	handler = g.Handler()
	return &authorizeFixture{srv: srv, queue: q, ring: f.ring}
}

// post sends body to the API and returns the status and the decoded reply.
func (f *authorizeFixture) post(t *testing.T, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+AuthorizePath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if hdr["Host"] != "" {
		req.Host = hdr["Host"]
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("status %d: reply is not JSON: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

// rule returns error.data.rule of a refusal.
func rule(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	d, _ := e["data"].(map[string]any)
	r, _ := d["rule"].(string)
	return r
}

// A client asks for a token; an operator approves the exact arguments; the
// token verifies for exactly them.
func TestAuthorizeWithApproval(t *testing.T) {
	f := newAuthorizeFixture(t)
	type reply struct {
		status int
		out    map[string]any
	}
	done := make(chan reply, 1)
	go func() {
		s, out := f.post(t, `{"tool":"transfer_funds","arguments":{"recipient":"vendor@example.com","amount":1000,"account_id":"ACC_123"}}`, nil)
		done <- reply{s, out}
	}()
	p := waitPending(t, f.queue)
	if p.Hash != "bb4b09fe11ca1829bcb98fda2a658faf5f93c2da07c3b16b40e2d8646c518c9c" || p.Upstream != "pay" {
		t.Fatalf("pending: %+v", p)
	}
	if err := f.queue.Decide(p.ID, true, "bob", "ok"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.status != http.StatusOK || r.out["approver"] != "bob" || r.out["binding_mode"] != "ad-hoc" || r.out["header"] != HeaderToken {
		t.Fatalf("status %d: %v", r.status, r.out)
	}
	token, _ := r.out["token"].(string)
	if _, err := zerotrust.Verify(f.ring, token, zerotrust.Expect{Sub: "alice", Upstream: "pay", Tool: "transfer_funds",
		Arguments: []byte(transferArgs), Now: time.Now()}); err != nil {
		t.Fatalf("the issued token does not verify for the approved call: %v", err)
	}
	if _, err := zerotrust.Verify(f.ring, token, zerotrust.Expect{Sub: "alice", Upstream: "pay", Tool: "transfer_funds",
		Arguments: []byte(`{"recipient":"vendor@example.com","amount":1001,"account_id":"ACC_123"}`), Now: time.Now()}); err == nil {
		t.Fatal("the issued token verifies for other arguments")
	}

	// A denial is a 403 naming the rule.
	go func() {
		s, out := f.post(t, `{"tool":"transfer_funds","arguments":{"amount":5}}`, nil)
		done <- reply{s, out}
	}()
	f.queue.Decide(waitPending(t, f.queue).ID, false, "bob", "no")
	if r := <-done; r.status != http.StatusForbidden || rule(r.out) != "approval-denied" {
		t.Fatalf("denied: %d %v", r.status, r.out)
	}
}

// Tier 2 tokens must be DPoP-bound: the proof on the request binds the
// token to the client's key, and a proof is used once.
func TestAuthorizeBindsTier2ToDPoP(t *testing.T) {
	f := newAuthorizeFixture(t)
	big := `{"tool":"transfer_funds","arguments":{"account_id":"ACC_123","amount":20000,"recipient":"vendor@example.com"}}`
	if s, out := f.post(t, big, nil); s != http.StatusForbidden || rule(out) != "INV-5" {
		t.Fatalf("Tier 2 without a proof: %d %v", s, out)
	}
	if len(f.queue.List()) != 0 {
		t.Fatal("a request that cannot get a token was held for approval")
	}
	alice := newDPoPClient(t)
	proof := alice.proof(t, f.srv.URL+AuthorizePath, "")
	done := make(chan map[string]any, 1)
	go func() { _, out := f.post(t, big, map[string]string{"DPoP": proof}); done <- out }()
	f.queue.Decide(waitPending(t, f.queue).ID, true, "bob", "")
	out := <-done
	if out["cnf_jkt"] != alice.jkt || out["tier"] != float64(2) {
		t.Fatalf("token for a Tier 2 call: %v", out)
	}
	claims, err := zerotrust.Verify(f.ring, out["token"].(string), zerotrust.Expect{Sub: "alice", Upstream: "pay", Tool: "transfer_funds",
		Arguments: []byte(`{"account_id":"ACC_123","amount":20000,"recipient":"vendor@example.com"}`), Now: time.Now()})
	if err != nil || claims.Confirmation == nil || claims.Confirmation.JKT != alice.jkt || claims.Classification != 2 {
		t.Fatalf("claims %+v %v: want cnf.jkt of alice's key and classification 2", claims, err)
	}
	if s, out := f.post(t, big, map[string]string{"DPoP": proof}); s != http.StatusUnauthorized || rule(out) != "INV-5" {
		t.Fatalf("the same proof again: %d %v", s, out)
	}
	if s, out := f.post(t, big, map[string]string{"DPoP": alice.proof(t, f.srv.URL+"/mcp", "")}); s != http.StatusUnauthorized {
		t.Fatalf("a proof for another URL: %d %v", s, out)
	}
}

// Bad requests get a precise refusal and never reach a person.
func TestAuthorizeRefusesBadRequests(t *testing.T) {
	f := newAuthorizeFixture(t)
	for _, tc := range []struct {
		name, body string
		hdr        map[string]string
		status     int
		rule       string
	}{
		{"duplicate key", `{"tool":"echo","tool":"transfer_funds"}`, nil, 400, "duplicate-key"},
		{"unknown field", `{"tool":"transfer_funds","argument":{}}`, nil, 400, "json"},
		{"folded duplicate", `{"tool":"echo","TOOL":"transfer_funds"}`, nil, 400, "folded-duplicate-key"},
		{"tool in another case", `{"Tool":"transfer_funds"}`, nil, 400, "json"},
		{"arguments with a long s", `{"tool":"transfer_funds","argumentſ":{"amount":1}}`, nil, 400, "json"},
		{"no tool", `{"arguments":{}}`, nil, 400, "tool"},
		{"unknown upstream", `{"upstream":"nope","tool":"x"}`, nil, 404, "upstream"},
		{"denied tool", `{"tool":"get_env"}`, nil, 403, `deny "get_env"`},
		{"unclassifiable", `{"tool":"transfer_funds","arguments":{"amount":"lots"}}`, nil, 403, "unclassifiable"},
		{"big integer", `{"tool":"transfer_funds","arguments":{"amount":9007199254740993}}`, nil, 403, "INV-3"},
		{"not JSON", `{"tool":`, nil, 400, "syntax"},
		{"DNS rebinding", `{"tool":"transfer_funds"}`, map[string]string{"Host": "evil.example"}, 403, "host"},
		{"text/plain", `{"tool":"transfer_funds"}`, map[string]string{"Content-Type": "text/plain"}, 415, "content-type"},
	} {
		s, out := f.post(t, tc.body, tc.hdr)
		if s != tc.status || rule(out) != tc.rule {
			t.Errorf("%s: %d %v, want %d %s", tc.name, s, out, tc.status, tc.rule)
		}
		if e, _ := out["error"].(map[string]any); e["code"] == float64(0) || e["message"] == "" {
			t.Errorf("%s: refusal without code or message: %v", tc.name, out)
		}
	}
	if len(f.queue.List()) != 0 {
		t.Fatalf("bad requests were held for approval: %+v", f.queue.List())
	}
}
