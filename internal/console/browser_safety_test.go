//go:build integration

package console_test

// Approval that is safe by construction, proved in real Chromium against a
// console on a bare approval queue (issue 19): Enter never decides,
// deceptive characters are drawn as escapes with a warning, the diff
// compares with the last approved call that ran, and a lost connection or session
// is shown, never a silently stale list.

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/console"
)

// loginAs logs the browser in at base as name.
func loginAs(t *testing.T, b context.Context, base, name string) {
	t.Helper()
	do(t, b, "log in as "+name,
		chromedp.Navigate(base+"/console/login"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("name"), name),
		chromedp.SendKeys(chromedp.ID("token"), safetyToken),
		chromedp.Click(chromedp.CSS("form.login button[type=submit]")),
		chromedp.WaitVisible(chromedp.ID("approver")),
	)
}

func heldTransfer(q *approval.Queue, recipient, amount string) approval.Pending {
	args := `{"account_id":"ACC_123","amount":` + amount + `,"recipient":"` + recipient + `"}`
	return q.Submit(approval.Request{Upstream: "demo", Subject: "alice", Tool: "transfer_funds",
		Arguments: []byte(args), Hash: "h-" + amount + "-" + recipient, Classification: 4, Tier: 1})
}

// TestBrowserEnterNeverDecides: typing a reason and pressing Enter, in the
// reason field or anywhere else in the form, neither approves nor denies.
func TestBrowserEnterNeverDecides(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	q := approval.New(time.Minute)
	base, _ := consoleServer(t, q, "127.0.0.1:0", console.Options{})
	p := heldTransfer(q, "vendor@example.com", "10000")
	loginAs(t, b, base, "alice")
	do(t, b, "type a denial reason and press Enter",
		chromedp.WaitVisible(chromedp.ID("call-"+p.ID)),
		chromedp.SendKeys(chromedp.ID("reason-"+p.ID), "this looks wrong\r"),
		chromedp.Sleep(time.Second),
		chromedp.KeyEvent("\r"),
		chromedp.Sleep(time.Second),
	)
	if _, ok := q.Get(p.ID); !ok {
		t.Fatalf("Enter in the reason field decided the call: %+v", q.History())
	}
	if v := get(t, b, "read the reason", chromedp.Value(chromedp.ID("reason-"+p.ID))); v != "this looks wrong" {
		t.Errorf("the reason field holds %q after Enter", v)
	}
	// Only the deny control itself denies, with the reason typed.
	do(t, b, "press Deny",
		chromedp.Click(chromedp.CSS("#call-"+p.ID+" button.deny")),
		chromedp.WaitVisible(chromedp.ID("flash")),
	)
	h := q.History()
	if len(h) != 1 || h[0].Approved || h[0].Reason != "this looks wrong" || h[0].Approver != "console:alice" {
		t.Fatalf("after Deny: %+v", h)
	}
}

// TestBrowserRevealsDeception: a recipient written backwards behind a
// right-to-left override is drawn as an escape, with a warning on the card,
// in the diff, and in the history's arguments and reason.
func TestBrowserRevealsDeception(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	shots := artifacts(t)
	q := approval.New(time.Minute)
	base, _ := consoleServer(t, q, "127.0.0.1:0", console.Options{})
	honest := heldTransfer(q, "vendor@example.com", "2500")
	if err := q.Decide(honest.ID, true, "console:bob", "invoice 17"); err != nil {
		t.Fatal(err)
	}
	if err := q.MarkExecuted(ctx, honest.ID); err != nil { // it ran: the diff's baseline
		t.Fatal(err)
	}
	p := heldTransfer(q, "\u202emoc.elpmaxe@rodnev", "2500")
	loginAs(t, b, base, "alice")
	do(t, b, "open the card", chromedp.WaitVisible(chromedp.ID("call-"+p.ID)))

	args := get(t, b, "read the arguments", chromedp.TextContent(chromedp.ID("args-"+p.ID)))
	if strings.Contains(args, "\u202e") || !strings.Contains(args, `"recipient": "\u{202E}moc.elpmaxe@rodnev"`) {
		t.Errorf("the main arguments view draws the override instead of showing it:\n%s", args)
	}
	do(t, b, "see the warning", chromedp.WaitVisible(chromedp.ID("deception-"+p.ID)))
	if w := get(t, b, "read the warning", chromedp.Text(chromedp.ID("deception-"+p.ID))); !strings.Contains(w, "direction-changing characters") {
		t.Errorf("the warning says %q", w)
	}
	// The warning is at the top of the card, above the arguments, however
	// long they are.
	if get(t, b, "compare positions", chromedp.Evaluate[bool](`document.getElementById('deception-`+p.ID+`').getBoundingClientRect().top >
		document.getElementById('args-`+p.ID+`').getBoundingClientRect().top`)) {
		t.Error("the warning is below the arguments")
	}
	diff := get(t, b, "read the diff", chromedp.TextContent(chromedp.CSS("#diff-"+p.ID+" .diffbody")))
	if strings.Contains(diff, "\u202e") || !strings.Contains(diff, `+   "recipient": "\u{202E}moc.elpmaxe@rodnev"`) ||
		!strings.Contains(diff, `-   "recipient": "vendor@example.com"`) {
		t.Errorf("the diff:\n%s", diff)
	}
	screenshot(t, b, shots, "console-bidi-warning-1280.png", 1280)
	do(t, b, "back to 1280 px", chromedp.EmulateViewport(1280, 900))

	do(t, b, "deny with a reason that hides a character",
		chromedp.SetValue(chromedp.ID("reason-"+p.ID), "spoofed\u200b recipient"), // typed keys cannot carry U+200B
		chromedp.Click(chromedp.CSS("#call-"+p.ID+" button.deny")),
		chromedp.WaitVisible(chromedp.ID("flash")),
		chromedp.Navigate(base+"/console/history"),
		chromedp.WaitVisible(chromedp.CSS(`#history tr[data-id="`+p.ID+`"]`)),
	)
	row := `#history tr[data-id="` + p.ID + `"] `
	if r := get(t, b, "read the reason", chromedp.TextContent(chromedp.CSS(row+"td.reason"))); r != `spoofed\u{200B} recipient` {
		t.Errorf("history shows the reason %q", r)
	}
	if a := get(t, b, "read the arguments", chromedp.TextContent(chromedp.CSS(row+"pre.args"))); !strings.Contains(a, `\u{202E}moc.elpmaxe@rodnev`) {
		t.Errorf("history shows the arguments %q", a)
	}
	if w := get(t, b, "read the row's warning", chromedp.Text(chromedp.CSS(row+".deception"))); !strings.Contains(w, "direction-changing") || !strings.Contains(w, "invisible") {
		t.Errorf("history warns %q", w)
	}
}

// TestBrowserDiffAgainstLastApproved: the same malicious call sent twice is
// compared, both times, with the last approved call that ran, never with
// the other, nor with an approval of it whose call did not run.
func TestBrowserDiffAgainstLastApproved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	q := approval.New(time.Minute)
	base, _ := consoleServer(t, q, "127.0.0.1:0", console.Options{})
	honest := heldTransfer(q, "vendor@example.com", "2500")
	if err := q.Decide(honest.ID, true, "console:bob", ""); err != nil {
		t.Fatal(err)
	}
	if err := q.MarkExecuted(ctx, honest.ID); err != nil {
		t.Fatal(err)
	}
	failed := heldTransfer(q, "attacker@example.net", "900000")
	if err := q.Decide(failed.ID, true, "console:bob", ""); err != nil {
		t.Fatal(err)
	}
	loginAs(t, b, base, "alice")
	first := heldTransfer(q, "attacker@example.net", "900000")
	second := heldTransfer(q, "attacker@example.net", "900000")
	for _, p := range []approval.Pending{first, second} {
		do(t, b, "see the call", chromedp.WaitVisible(chromedp.ID("diff-"+p.ID)))
		text := get(t, b, "read the diff", chromedp.Text(chromedp.ID("diff-"+p.ID)))
		if strings.Contains(text, "Same arguments") || !strings.Contains(text, "Compared with the last approved call of transfer_funds for alice that ran: "+honest.ID) ||
			!strings.Contains(text, `+   "recipient": "attacker@example.net"`) {
			t.Errorf("the diff of %s:\n%s", p.ID, text)
		}
	}
}

// TestBrowserShowsLostConnection: with the page open, the console stops
// (the page says it is reconnecting and greys the list), then comes back
// as a new process that has forgotten the session (the page says it is
// signed out and hides the calls). It never keeps showing a stale list.
func TestBrowserShowsLostConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	q := approval.New(time.Minute)
	base, stop := consoleServer(t, q, "127.0.0.1:0", console.Options{})
	loginAs(t, b, base, "alice")
	do(t, b, "see the empty list", chromedp.WaitVisible(chromedp.ID("pending-empty")))

	stop()
	do(t, b, "see the page reconnecting", chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="reconnecting"]`)))
	if s := get(t, b, "read the state", chromedp.Text(chromedp.ID("conn"))); !strings.Contains(s, "Connection to the gateway lost") {
		t.Errorf("while the console is down the page says %q", s)
	}
	if e := get(t, b, "read the list", chromedp.Text(chromedp.ID("pending-list"))); strings.Contains(e, "No calls are waiting") {
		t.Errorf("while the console is down the page says %q", e)
	}

	// A call arrives while the console is down; a new console (a restarted
	// gateway) knows no session.
	heldTransfer(q, "vendor@example.com", "2500")
	consoleServer(t, q, strings.TrimPrefix(base, "http://"), console.Options{})
	do(t, b, "see the page signed out", chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="signedout"]`)))
	if s := get(t, b, "read the state", chromedp.Text(chromedp.ID("conn"))); !strings.Contains(s, "Signed out") || !strings.Contains(s, "Log in again") {
		t.Errorf("after the restart the page says %q", s)
	}
	do(t, b, "the list is hidden", chromedp.WaitNotVisible(chromedp.ID("pending-list")))

	// Logging in again shows the call that arrived meanwhile.
	loginAs(t, b, base, "alice")
	do(t, b, "see the call", chromedp.WaitVisible(chromedp.CSS("article.call")))
}

// TestBrowserLoginRateLimited: after five wrong tokens the login form says
// to wait, and refuses even the right token until the wait is over.
func TestBrowserLoginRateLimited(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	q := approval.New(time.Minute)
	// The limiter's clock moves only when the test says: a backoff of 1 s
	// would otherwise run out while a loaded machine's browser types.
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	base, _ := consoleServer(t, q, "127.0.0.1:0", console.Options{LoginClock: clock})
	try := func(token string) string {
		t.Helper()
		do(t, b, "log in",
			chromedp.Navigate(base+"/console/login"),
			chromedp.WaitVisible(chromedp.ID("token")),
			chromedp.SendKeys(chromedp.ID("name"), "mallory"),
			chromedp.SendKeys(chromedp.ID("token"), token),
			chromedp.Click(chromedp.CSS("form.login button[type=submit]")),
			chromedp.WaitVisible(chromedp.ID("login-error")),
		)
		return get(t, b, "read the error", chromedp.Text(chromedp.ID("login-error")))
	}
	for i := range 6 {
		if msg := try("guess-" + string(rune('a'+i))); !strings.Contains(msg, "not the admin token") {
			t.Fatalf("wrong token %d: %q", i+1, msg)
		}
	}
	if msg := try(safetyToken); !strings.Contains(msg, "Too many failed logins from this address") {
		t.Fatalf("the right token right after six wrong ones: %q, want a refusal", msg)
	}
	mu.Lock()
	now = now.Add(1500 * time.Millisecond) // the backoff is over
	mu.Unlock()
	loginAs(t, b, base, "alice")
}

// TestBrowserSensitiveApprovalGesture: a Tier 2 call's Approve stays
// disabled until the first six characters of its parameters_hash are
// typed; a page edited to enable it anyway is refused by the server.
func TestBrowserSensitiveApprovalGesture(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	q := approval.New(time.Minute)
	base, _ := consoleServer(t, q, "127.0.0.1:0", console.Options{})
	hash := "c0ffee1234567890c0ffee1234567890c0ffee1234567890c0ffee1234567890"
	p := q.Submit(approval.Request{Upstream: "demo", Subject: "alice", Tool: "transfer_funds",
		Arguments: []byte(`{"amount":10000}`), Hash: hash, Classification: 2, Tier: 2})
	loginAs(t, b, base, "alice")
	approve := chromedp.CSS("#call-" + p.ID + " button.approve")
	enabled := func() bool {
		return !get(t, b, "read Approve", chromedp.Evaluate[bool](`document.querySelector('#call-`+p.ID+` button.approve').disabled`))
	}
	do(t, b, "see the call", chromedp.WaitVisible(chromedp.ID("confirm-"+p.ID)))
	if enabled() {
		t.Fatal("Approve is enabled before the confirmation")
	}
	do(t, b, "type a wrong confirmation", chromedp.SendKeys(chromedp.ID("confirm-"+p.ID), "c0ffe3"))
	if enabled() {
		t.Fatal("Approve is enabled by a wrong confirmation")
	}
	// Edit the page to enable the button: the server still refuses.
	do(t, b, "force Approve",
		chromedp.RemoveAttribute(approve, "disabled"),
		chromedp.Click(approve),
		chromedp.WaitVisible(chromedp.ID("message")),
	)
	if msg := get(t, b, "read the refusal", chromedp.Text(chromedp.ID("message"))); !strings.Contains(msg, "type the first 6 characters") {
		t.Errorf("the forced approval: %q", msg)
	}
	if _, ok := q.Get(p.ID); !ok {
		t.Fatal("a forced approval without the confirmation decided the call")
	}
	do(t, b, "type the confirmation and approve",
		chromedp.Navigate(base+"/console"),
		chromedp.WaitVisible(chromedp.ID("confirm-"+p.ID)),
		chromedp.SendKeys(chromedp.ID("confirm-"+p.ID), "C0FFEE"),
		chromedp.WaitEnabled(approve),
		chromedp.Click(approve),
		chromedp.WaitVisible(chromedp.ID("flash")),
	)
	if h := q.History(); len(h) != 1 || !h[0].Approved {
		t.Fatalf("after the confirmed approval: %+v", h)
	}
}

// TestBrowserTwoOperatorsRace: alice and bob (separate browser profiles)
// look at the same call; bob denies it while alice's page has not yet
// heard of it, and alice's Approve is told who decided, what, and when.
func TestBrowserTwoOperatorsRace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice := browser(t, ctx)
	bob, cancelBob := chromedp.NewContext(alice, chromedp.WithNewBrowserContext())
	defer cancelBob()
	if err := chromedp.Do(bob); err != nil { // the first run opens the profile and its tab, for bob's whole context
		t.Fatal(err)
	}
	q := approval.New(time.Minute)
	base, _ := consoleServer(t, q, "127.0.0.1:0", console.Options{})
	p := heldTransfer(q, "vendor@example.com", "2500")
	loginAs(t, alice, base, "alice")
	loginAs(t, bob, base, "bob")
	do(t, alice, "alice sees the call", chromedp.Navigate(base+"/console"), chromedp.WaitVisible(chromedp.ID("call-"+p.ID)))
	do(t, bob, "bob sees the call", chromedp.WaitVisible(chromedp.ID("call-"+p.ID)))
	if who := get(t, bob, "read bob's identity", chromedp.Text(chromedp.ID("approver"))); who != "console:bob" {
		t.Fatalf("the second profile is signed in as %q", who)
	}
	// Alice's page keeps her form as it was when she pressed Approve.
	get(t, alice, "keep alice's form", chromedp.Evaluate[bool](`(window.pressed = document.querySelector('#call-`+p.ID+` form.decide')) !== null`))
	do(t, bob, "bob denies",
		chromedp.SendKeys(chromedp.ID("reason-"+p.ID), "not ours"),
		chromedp.Click(chromedp.CSS("#call-"+p.ID+" button.deny")),
		chromedp.WaitVisible(chromedp.ID("flash")),
	)
	get(t, alice, "put alice's form back", chromedp.Evaluate[bool](`document.body.appendChild(window.pressed) !== null`))
	do(t, alice, "alice approves a moment later",
		chromedp.Click(chromedp.CSS("form.decide button.approve")),
		chromedp.WaitVisible(chromedp.ID("message")),
	)
	msg := get(t, alice, "read what alice is told", chromedp.Text(chromedp.ID("message")))
	for _, want := range []string{"Your decision was not recorded", "already denied by console:bob", "not ours", time.Now().UTC().Format("2006-01-02 ")} {
		if !strings.Contains(msg, want) {
			t.Errorf("alice is told %q, want it to say %q", msg, want)
		}
	}
	if h := q.History(); len(h) != 1 || h[0].Approved || h[0].Approver != "console:bob" {
		t.Errorf("the outcome: %+v", h)
	}
}

// TestBrowserTwoPersonRule: a level-1 call needs two approvers. Alice
// approves (after typing the hash's start); it does not run, her page says
// she approved and disables Approve; bob approves in his own profile, and
// only then is the call approved, by both.
func TestBrowserTwoPersonRule(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice := browser(t, ctx)
	bob, cancelBob := chromedp.NewContext(alice, chromedp.WithNewBrowserContext())
	defer cancelBob()
	if err := chromedp.Do(bob); err != nil {
		t.Fatal(err)
	}
	q := approval.NewQueue(approval.Options{Timeout: time.Minute, Approvers: map[int]int{1: 2}})
	t.Cleanup(func() { q.Close() })
	base, _ := consoleServer(t, q, "127.0.0.1:0", console.Options{})
	hash := "5eed5eed00112233445566778899aabbccddeeff00112233445566778899aabb"
	p := q.Submit(approval.Request{Upstream: "demo", Subject: "alice", Tool: "transfer_funds",
		Arguments: []byte(`{"amount":1000000}`), Hash: hash, Classification: 1, Tier: 3})
	approve := func(b context.Context, who string) {
		t.Helper()
		loginAs(t, b, base, who)
		do(t, b, who+" approves",
			chromedp.WaitVisible(chromedp.ID("confirm-"+p.ID)),
			chromedp.SendKeys(chromedp.ID("confirm-"+p.ID), "5eed5e"),
			chromedp.WaitEnabled(chromedp.CSS("#call-"+p.ID+" button.approve")),
			chromedp.Click(chromedp.CSS("#call-"+p.ID+" button.approve")),
			chromedp.WaitVisible(chromedp.ID("flash")),
		)
	}
	loginAs(t, bob, base, "bob")
	do(t, bob, "bob sees the call before alice approves", chromedp.WaitVisible(chromedp.ID("quorum-"+p.ID)))
	approve(alice, "alice")
	// Bob's open page learns of alice's approval without a reload.
	if !get(t, bob, "bob sees alice's approval", chromedp.Poll[bool](`document.getElementById('quorum-`+p.ID+`').textContent.includes('console:alice')`)) {
		t.Error("bob's page does not show alice's approval")
	}
	if f := get(t, alice, "read the flash", chromedp.Text(chromedp.ID("flash"))); !strings.Contains(f, "1 of the 2 different approvers") {
		t.Errorf("after alice's approval: %q", f)
	}
	if _, ok := q.Get(p.ID); !ok {
		t.Fatal("one approval ran a call that needs two")
	}
	if s := get(t, alice, "read the card", chromedp.Text(chromedp.ID("quorum-"+p.ID))); !strings.Contains(s, "Approved so far by console:alice") {
		t.Errorf("alice's card says %q", s)
	}
	do(t, alice, "alice types the confirmation again", chromedp.SendKeys(chromedp.ID("confirm-"+p.ID), "5eed5e"))
	if !get(t, alice, "read Approve", chromedp.Evaluate[bool](`document.querySelector('#call-`+p.ID+` button.approve').disabled`)) {
		t.Error("alice can approve a second time")
	}
	approve(bob, "bob")
	if h := q.History(); len(h) != 1 || !h[0].Approved || h[0].Approver != "console:alice, console:bob" {
		t.Fatalf("after bob's approval: %+v", h)
	}
}

// TestBrowserLongValuesAndNumbers: a 20,000-character argument does not
// push the buttons away (the line is collapsed, and expands on request),
// and a large amount is drawn with its digits grouped.
func TestBrowserLongValuesAndNumbers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	q := approval.New(time.Minute)
	base, _ := consoleServer(t, q, "127.0.0.1:0", console.Options{})
	memo := strings.Repeat("lorem ipsum ", 1666) + "THE-END"
	p := q.Submit(approval.Request{Upstream: "demo", Subject: "alice", Tool: "transfer_funds",
		Arguments: []byte(`{"amount":250000000,"memo":"` + memo + `"}`), Hash: "h-long", Classification: 4})
	loginAs(t, b, base, "alice")
	do(t, b, "see the call", chromedp.WaitVisible(chromedp.ID("call-"+p.ID)))
	height := get(t, b, "measure the card", chromedp.Evaluate[float64](`document.getElementById('call-`+p.ID+`').getBoundingClientRect().height`))
	if height > 1500 {
		t.Errorf("the card is %.0f px high: a long argument pushes the decision away", height)
	}
	if get(t, b, "is the end shown", chromedp.Evaluate[bool](`document.getElementById('args-`+p.ID+`').innerText.includes('THE-END')`)) {
		t.Error("the whole long value is drawn")
	}
	do(t, b, "expand it", chromedp.Click(chromedp.CSS("#args-"+p.ID+" details.more > summary")))
	if !get(t, b, "is the end shown", chromedp.Evaluate[bool](`document.getElementById('args-`+p.ID+`').innerText.includes('THE-END')`)) {
		t.Error("expanding does not show the rest of the value")
	}
	groups := get(t, b, "read the groups", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#args-`+p.ID+` .num .grp')).map(e => e.textContent)`))
	gap := get(t, b, "measure the gap", chromedp.Evaluate[string](`getComputedStyle(document.querySelector('#args-`+p.ID+` .num .grp')).marginLeft`))
	if strings.Join(groups, ",") != "000,000" || gap == "0px" {
		t.Errorf("the amount's digit groups %v, gap %s: want 250 000 000 drawn apart", groups, gap)
	}
}

// TestBrowserOIDCLogin: the person clicks "Log in with your identity
// provider", the local issuer (on another site: localhost, while the
// console is on 127.0.0.1) logs them in through the authorization code
// flow with PKCE, and the console shows them signed in under the
// identity the issuer vouches for; their decision carries it.
func TestBrowserOIDCLogin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := browser(t, ctx)
	is := newTestIssuer(t, "alice@idp.example")
	is.base = strings.Replace(is.srv.URL, "127.0.0.1", "localhost", 1)
	q := approval.New(time.Minute)
	base := oidcConsole(t, is, q)
	p := heldTransfer(q, "vendor@example.com", "2500")
	do(t, b, "log in through the identity provider",
		chromedp.Navigate(base+"/console"),
		chromedp.WaitVisible(chromedp.ID("oidc-login")),
		chromedp.Click(chromedp.ID("oidc-login")),
		chromedp.WaitVisible(chromedp.ID("call-"+p.ID)),
	)
	if who := get(t, b, "read the identity", chromedp.Text(chromedp.ID("approver"))); who != "console:oidc:alice@idp.example" {
		t.Fatalf("signed in as %q", who)
	}
	do(t, b, "deny",
		chromedp.Click(chromedp.CSS("#call-"+p.ID+" button.deny")),
		chromedp.WaitVisible(chromedp.ID("flash")),
	)
	if h := q.History(); len(h) != 1 || h[0].Approver != "console:oidc:alice@idp.example" {
		t.Errorf("the decision is recorded as %+v", h)
	}
}
