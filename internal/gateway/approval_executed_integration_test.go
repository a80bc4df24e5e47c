//go:build integration

package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/console"
	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/gateway"
)

// An approved call counts as the console's diff baseline only once it ran:
// the gateway forwarded it and the upstream answered without error. An
// approval whose call then failed (a tool error, an upstream that could
// not be reached) is passed over, so the attacker's own arguments, approved once
// and failed, cannot make the card of the same call sent again say "Same
// arguments".
func TestDiffBaselineIsTheLastApprovedCallThatRan(t *testing.T) {
	dataDir := keyedDataDir(t)
	// The demo upstream, which answers HTTP 503 while down is set.
	ledger := demoserver.NewLedger()
	server := demoserver.New(demoserver.Options{Root: t.TempDir(), Ledger: ledger})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	var down atomic.Bool
	upSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() && r.Method == http.MethodPost {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(upSrv.Close)
	_, opts := optionsFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust:
    data_dir: %q
    subject: alice
    store: memory
    hold_for_approval: true
    approval_channels: [admin]
    classification: [{level: 4, name: transfers, when: 'tool.name == "transfer_funds"'}]
  upstreams: [{name: demo, url: %s}]
`, dataDir, upSrv.URL))
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	q := opts.Approvals
	ctx := testCtx(t)
	cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, "2025-11-25")
	t.Cleanup(func() { cs.Close() })

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	// call sends a transfer and waits until it is held; approve decides it
	// and returns what the client got.
	seen := map[string]bool{}
	call := func(args map[string]any) (approval.Pending, <-chan outcome) {
		t.Helper()
		done := make(chan outcome, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds", Arguments: args})
			done <- outcome{res, err}
		}()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			for _, p := range q.List() {
				if !seen[p.ID] {
					seen[p.ID] = true
					return p, done
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the transfer %v was not held", args)
			}
		}
	}
	approve := func(args map[string]any) (approval.Pending, outcome) {
		t.Helper()
		p, done := call(args)
		if err := q.Decide(p.ID, true, "console:bob", ""); err != nil {
			t.Fatal(err)
		}
		return p, <-done
	}

	honest, got := approve(map[string]any{"account_id": "ACC_123", "amount": 40, "recipient": "vendor@example.com"})
	if got.err != nil || got.res.IsError {
		t.Fatalf("the honest transfer: %+v %v", got.res, got.err)
	}
	attack := map[string]any{"account_id": "ACC_123", "amount": 900000, "recipient": "attacker@example.net"}
	toolFailed, got := approve(attack) // more than the account holds: a result with isError
	if got.err != nil || !got.res.IsError {
		t.Fatalf("the transfer beyond the balance: %+v %v, want a tool error", got.res, got.err)
	}
	down.Store(true)
	unreachable, got := approve(attack) // the upstream is down: a JSON-RPC error from warden
	down.Store(false)
	if got.err == nil {
		t.Fatalf("a transfer approved while the upstream is down: %+v, want a JSON-RPC error", got.res)
	}
	if n := len(ledger.Transfers()); n != 1 {
		t.Fatalf("%d transfers ran, want the honest one alone", n)
	}

	// The marks are set when the answer passes, before the client has it.
	ran := map[string]bool{}
	for _, h := range q.History() {
		ran[h.ID] = !h.Executed.IsZero()
	}
	if !ran[honest.ID] || ran[toolFailed.ID] || ran[unreachable.ID] {
		t.Fatalf("executed: honest %v, tool error %v, upstream down %v; want only the honest call",
			ran[honest.ID], ran[toolFailed.ID], ran[unreachable.ID])
	}

	// The attacker sends the failed call again: its card compares it with
	// the honest transfer, and names the approval that did not run.
	again, _ := call(attack)
	page := consolePage(t, q)
	for _, want := range []string{
		"Compared with the last approved call of transfer_funds for alice that ran: " + honest.ID + ", approved by console:bob",
		unreachable.ID + ", approved by console:bob at ",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the card of %s lacks %q:\n%s", again.ID, want, page)
		}
	}
	if strings.Contains(page, "Same arguments") {
		t.Errorf("the card of %s says the arguments are the same as an approved call's:\n%s", again.ID, page)
	}
	if err := q.Decide(again.ID, false, "console:bob", "seen before"); err != nil {
		t.Fatal(err)
	}
}

// consolePage logs in to a console on q and returns its pending page.
func consolePage(t *testing.T, q *approval.Queue) string {
	t.Helper()
	const token = "test-admin-token-0123456789"
	c, err := console.New(console.Options{Queue: q, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console", c)
	mux.Handle("/console/", c)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	resp, err := client.PostForm(srv.URL+"/console/login", url.Values{"name": {"alice"}, "token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/console" {
		t.Fatalf("login: %s at %s, %v", resp.Status, resp.Request.URL, err)
	}
	return string(page)
}
