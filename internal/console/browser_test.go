//go:build integration

package console_test

// The console in a real browser: headless Chromium, driven with chromedp,
// against a gateway built from YAML in front of the demo MCP server, with a
// go-sdk client whose transfer_funds call is held for approval.
//
// Chromium runs with --no-sandbox only when the test runs as root (as in
// containers): Chromium refuses to start its sandbox as root. The browser
// only loads pages from the loopback test servers.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/assemble"
	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/console"
	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/testenv"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// chromium returns the browser to run, skipping the test when there is none
// (failing under WARDEN_REQUIRE_DEPS=1).
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	p := os.Getenv("WARDEN_CHROMIUM")
	if p == "" {
		p, _ = exec.LookPath("chromium")
	}
	if p == "" {
		if testenv.RequireDeps() {
			t.Fatal("chromium is not installed (WARDEN_CHROMIUM unset, none on PATH) and WARDEN_REQUIRE_DEPS=1")
		}
		t.Skip("chromium is not installed: set WARDEN_CHROMIUM or install Debian's chromium")
	}
	return p
}

// artifacts is where screenshots go: $WARDEN_ARTIFACTS, else a temp dir.
func artifacts(t *testing.T) string {
	if d := os.Getenv("WARDEN_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// stack is a demo upstream, a gateway holding transfer_funds for approval,
// its admin listener with the console, and a connected go-sdk client.
type stack struct {
	ledger  *demoserver.Ledger
	queue   *approval.Queue
	audit   *audit.Log
	token   string
	console string // the admin listener's base URL
	client  *mcp.ClientSession
}

func newStack(t *testing.T, ctx context.Context) *stack {
	t.Helper()
	dataDir := t.TempDir()
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		t.Fatal(err)
	}
	ledger := demoserver.NewLedger()
	demo := demoserver.New(demoserver.Options{Root: t.TempDir(), Ledger: ledger})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo }, nil))
	t.Cleanup(up.Close)

	cfg, err := config.Parse([]byte(fmt.Sprintf(`version: 1
gateway:
  zero_trust: {data_dir: %q, subject: alice, store: memory, hold_for_approval: true}
  audit: {enabled: true}
  upstreams:
    - name: demo
      url: %s
      require_token: [transfer_funds]
`, dataDir, up.URL)), "test.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	opts, err := assemble.FromConfig(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { gw.Close(); g.Close() })

	// The admin listener, composed as `warden gateway` composes it.
	token, err := approval.EnsureToken(opts.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := opts.Recorder.(*gateway.Records)
	if rs == nil || rs.Audit == nil {
		t.Fatal("the gateway keeps no audit log")
	}
	con, err := console.New(console.Options{Queue: opts.Approvals, Token: token, Audit: rs.Audit})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console", con)
	mux.Handle("/console/", con)
	mux.Handle("/", approval.Handler(opts.Approvals, token))
	admin := httptest.NewServer(mux)
	t.Cleanup(admin.Close)

	client := mcp.NewClient(&mcp.Implementation{Name: "browser-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Registered last, so it runs first: the servers wait for open streams.
	t.Cleanup(func() { cs.Close() })
	// As clients do before calling: the gateway learns the tools' descriptions.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return &stack{ledger: ledger, queue: opts.Approvals, audit: rs.Audit, token: token, console: admin.URL, client: cs}
}

type callResult struct {
	res *mcp.CallToolResult
	err error
}

// transfer calls transfer_funds in the background; the call is held until
// someone decides.
func (s *stack) transfer(ctx context.Context, amount int) <-chan callResult {
	out := make(chan callResult, 1)
	go func() {
		res, err := s.client.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds",
			Arguments: map[string]any{"recipient": "vendor@example.com", "amount": amount, "account_id": "ACC_123"}})
		out <- callResult{res, err}
	}()
	return out
}

// pendingFor waits until the queue holds a call with amount, and returns it.
func (s *stack) pendingFor(t *testing.T, ctx context.Context, amount int) approval.Pending {
	t.Helper()
	changed, cancel := s.queue.Subscribe()
	defer cancel()
	needle := fmt.Sprintf(`"amount":%d,`, amount)
	for {
		for _, p := range s.queue.List() {
			if strings.Contains(string(p.Arguments), needle) {
				return p
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the call of %d never reached the queue", amount)
		}
	}
}

func result(t *testing.T, ctx context.Context, ch <-chan callResult) callResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		t.Fatal("the client got no answer")
		return callResult{}
	}
}

// browser starts headless Chromium at 1280 px; the whole browser lives
// within ctx.
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.WindowSize(1280, 900),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium will not start its sandbox as root
	}
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return bctx
}

// do runs browser steps, bounded by the step timeout.
func do(t *testing.T, b context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b, 30*time.Second)
	defer cancel()
	for i, step := range steps {
		if err := chromedp.Do(ctx, step); err != nil {
			t.Fatalf("%s, step %d: %v\n%s", what, i+1, err, pageState(b))
		}
	}
}

// pageState describes the page for a failure message.
func pageState(b context.Context) string {
	ctx, cancel := context.WithTimeout(b, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	return "page " + loc + ":\n" + html
}

// get runs one browser action that returns a value.
func get[T any](t *testing.T, b context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func screenshot(t *testing.T, b context.Context, dir, name string, width int64) {
	t.Helper()
	do(t, b, "resize for "+name, chromedp.EmulateViewport(width, 900))
	png := get(t, b, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// TestConsoleInBrowser is the console's end-to-end proof: a held call
// appears live, the page shows its exact arguments and hash, Approve runs
// it, Deny refuses it with the approver's name, a tampered decision is
// refused, and logged out the console shows nothing.
func TestConsoleInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	s := newStack(t, ctx)
	shots := artifacts(t)
	card := func(id, sel string) chromedp.CSS { return chromedp.CSS("#call-" + id + " " + sel) }

	// Log in with a name and the admin token.
	do(t, b, "login",
		chromedp.Navigate(s.console+"/console"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("name"), "alice"),
		chromedp.SendKeys(chromedp.ID("token"), s.token),
		chromedp.Click(chromedp.CSS("form.login button[type=submit]")),
		chromedp.WaitVisible(chromedp.ID("approver")),
		chromedp.WaitVisible(chromedp.ID("pending-empty")),
	)
	if who := get(t, b, "read the approver", chromedp.Text(chromedp.ID("approver"))); who != "console:alice" {
		t.Fatalf("signed in as %q", who)
	}

	// (1) The client calls transfer_funds; (2) it appears without a reload.
	get(t, b, "mark the page", chromedp.Evaluate[int](`window.wardenTestMarker = 42`))
	approved := s.transfer(ctx, 2500)
	p := s.pendingFor(t, ctx, 2500)
	do(t, b, "wait for the call to appear", chromedp.WaitVisible(chromedp.ID("call-"+p.ID)))
	if m := get(t, b, "check for a reload", chromedp.Evaluate[int](`window.wardenTestMarker || 0`)); m != 42 {
		t.Fatal("the page reloaded: the call did not arrive through the event stream")
	}

	// (3) The exact parameters and hash are on the page.
	wantHash, canonical, err := zerotrust.ParamsHash([]byte(`{"recipient":"vendor@example.com","amount":2500,"account_id":"ACC_123"}`))
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	json.Indent(&pretty, canonical, "", "  ")
	if got := get(t, b, "read the arguments", chromedp.TextContent(chromedp.ID("args-"+p.ID))); got != pretty.String() {
		t.Errorf("the page shows the arguments\n%s\nwant exactly\n%s", got, pretty.String())
	}
	if got := get(t, b, "read the hash", chromedp.TextContent(chromedp.ID("hash-"+p.ID))); got != wantHash || p.Hash != wantHash {
		t.Errorf("the page shows parameters_hash %q, the queue holds %q, want %q", got, p.Hash, wantHash)
	}
	if desc := get(t, b, "read the description", chromedp.Text(card(p.ID, "dd.description"))); !strings.Contains(desc, "Transfers money") {
		t.Errorf("the page shows the tool description %q", desc)
	}
	if what := get(t, b, "read the wording", chromedp.Text(chromedp.ID("what-"+p.ID))); !strings.Contains(what, "Approve runs transfer_funds once with exactly these arguments") {
		t.Errorf("the page does not say what Approve runs: %q", what)
	}
	screenshot(t, b, shots, "console-pending-1280.png", 1280)
	screenshot(t, b, shots, "console-pending-390.png", 390)
	if get(t, b, "check the phone layout", chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)) {
		t.Error("at 390 px the page scrolls sideways")
	}
	do(t, b, "back to 1280 px", chromedp.EmulateViewport(1280, 900))

	// Approve; (4) the client gets the tool's result.
	do(t, b, "approve",
		chromedp.SendKeys(chromedp.ID("reason-"+p.ID), "checked the invoice"),
		chromedp.Click(card(p.ID, "button.approve")),
		chromedp.WaitVisible(chromedp.ID("flash")),
	)
	r := result(t, ctx, approved)
	if r.err != nil || r.res.IsError {
		t.Fatalf("the approved call failed: %v %+v", r.err, r.res)
	}
	if got, _ := json.Marshal(r.res.StructuredContent); !strings.Contains(string(got), "txn-0001") {
		t.Errorf("the client got %s, want the transfer's receipt", got)
	}
	if bal, _ := s.ledger.Balance("ACC_123"); bal != 97500 {
		t.Errorf("balance %d, want 97500 after one approved transfer of 2500", bal)
	}
	if h := s.queue.History(); len(h) == 0 || h[0].Approver != "console:alice" || h[0].Reason != "checked the invoice" {
		t.Errorf("the decision was not recorded as console:alice's: %+v", h)
	}
	// The audit record of the call names the approver, and the history
	// page shows that record with an intact chain.
	found, err := s.audit.Query(ctx, func(r *audit.Record) bool {
		return r.ParamsHash == wantHash && r.Tool == "transfer_funds" && r.Approver == "console:alice"
	}, 0)
	if err != nil || len(found.Matches) == 0 || !found.Matches[0].Verified {
		t.Errorf("no verified audit record of the approved call naming console:alice: %+v %v", found, err)
	}
	do(t, b, "open the history",
		chromedp.Navigate(s.console+"/console/history?decision=approved"),
		chromedp.WaitVisible(chromedp.CSS("#history td.audit.ok")),
	)
	if row := get(t, b, "read the history", chromedp.Text(chromedp.CSS("#history tbody tr"))); !strings.Contains(row, "console:alice") ||
		!strings.Contains(row, "chain intact up to it") {
		t.Errorf("the history row: %q", row)
	}
	screenshot(t, b, shots, "console-history-1280.png", 1280)
	do(t, b, "back to the pending calls", chromedp.Navigate(s.console+"/console"), chromedp.WaitVisible(chromedp.ID("pending-empty")))

	// The deny path: the client gets approval-denied naming the approver.
	denied := s.transfer(ctx, 900000)
	p = s.pendingFor(t, ctx, 900000)
	do(t, b, "deny",
		chromedp.WaitVisible(chromedp.ID("call-"+p.ID)),
		chromedp.SendKeys(chromedp.ID("reason-"+p.ID), "too much"),
		chromedp.Click(card(p.ID, "button.deny")),
		chromedp.WaitVisible(chromedp.ID("flash")),
	)
	r = result(t, ctx, denied)
	var werr *sdkjsonrpc.Error
	if !errors.As(r.err, &werr) {
		t.Fatalf("the denied call: want a JSON-RPC error, got %v %+v", r.err, r.res)
	}
	var data struct{ Stage, Rule string }
	json.Unmarshal(werr.Data, &data)
	if data.Rule != "approval-denied" || !strings.Contains(werr.Message, "console:alice") || !strings.Contains(werr.Message, "too much") {
		t.Errorf("the denial: %q %s, want rule approval-denied naming console:alice and the reason", werr.Message, werr.Data)
	}
	if bal, _ := s.ledger.Balance("ACC_123"); bal != 97500 {
		t.Errorf("balance %d after the denied transfer, want 97500", bal)
	}

	// Tampering: the form of one call posted with another hash, with a
	// valid CSRF token, by a request made in the page and by editing it.
	held := s.transfer(ctx, 3000)
	p = s.pendingFor(t, ctx, 3000)
	do(t, b, "wait for the third call", chromedp.WaitVisible(chromedp.ID("call-"+p.ID)))
	status := get(t, b, "post another hash with a valid CSRF token", chromedp.Evaluate[int](fmt.Sprintf(`(async () => {
		const form = document.querySelector('#call-%s form.decide');
		const body = new URLSearchParams({csrf: form.elements.csrf.value, hash: %q, decision: 'approve'});
		const r = await fetch(form.action, {method: 'POST', body: body, credentials: 'same-origin'});
		return r.status;
	})()`, p.ID, wantHash), chromedp.EvalAwaitPromise))
	if status != http.StatusConflict {
		t.Errorf("a decision with another parameters_hash: status %d, want 409", status)
	}
	do(t, b, "edit the page's hash and press Approve",
		chromedp.SetAttributeValue(card(p.ID, "input[name=hash]"), "value", wantHash),
		chromedp.Click(card(p.ID, "button.approve")),
		chromedp.WaitVisible(chromedp.ID("message")),
	)
	if msg := get(t, b, "read the refusal", chromedp.Text(chromedp.ID("message"))); !strings.Contains(msg, "Nothing was decided") {
		t.Errorf("the tampered form: %q", msg)
	}
	if _, ok := s.queue.Get(p.ID); !ok {
		t.Fatal("a tampered decision settled the call")
	}

	// Logged out, the console shows nothing, and the event stream refuses.
	do(t, b, "log out",
		chromedp.Navigate(s.console+"/console"),
		chromedp.WaitVisible(chromedp.ID("call-"+p.ID)),
		chromedp.Click(chromedp.CSS("form.logout button")),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.Navigate(s.console+"/console"),
		chromedp.WaitVisible(chromedp.ID("token")),
	)
	body := get(t, b, "read the page", chromedp.Text(chromedp.CSS("body")))
	if strings.Contains(body, "transfer_funds") || strings.Contains(body, p.Hash) || strings.Contains(body, "3000") {
		t.Errorf("logged out, the console shows the held call:\n%s", body)
	}
	status = get(t, b, "open the event stream", chromedp.Evaluate[int](`fetch('/console/events').then(r => r.status)`, chromedp.EvalAwaitPromise))
	if status != http.StatusUnauthorized {
		t.Errorf("logged out, /console/events answered %d", status)
	}
	screenshot(t, b, shots, "console-login-390.png", 390)

	// The held call is still waiting; settle it so the client returns.
	if err := s.queue.Decide(p.ID, false, "test", "end of test"); err != nil {
		t.Fatal(err)
	}
	result(t, ctx, held)
}
