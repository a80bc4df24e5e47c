package console

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
)

const testToken = "test-admin-token-0123456789abcdef"

// env is a console on a loopback test server, with its queue.
type env struct {
	t   *testing.T
	q   *approval.Queue
	srv *httptest.Server
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	if opts.Queue == nil {
		opts.Queue = approval.New(time.Minute)
	}
	opts.Token = testToken
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console", c)
	mux.Handle("/console/", c)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{t: t, q: opts.Queue, srv: srv}
}

// transfer submits a held transfer_funds call.
func (e *env) transfer(amount string) approval.Pending {
	args := `{"account_id":"ACC_123","amount":` + amount + `,"recipient":"vendor@example.com"}`
	return e.q.Submit(approval.Request{Upstream: "demo", Session: "sess-1", Subject: "alice", Tool: "transfer_funds",
		Arguments: []byte(args), Hash: "hash-of-" + amount, Description: "Move money between accounts.",
		Classification: 4, Tier: 2, ClassRule: "big-transfer", Findings: []string{"recipient is new"}})
}

// do sends a request without following redirects. cookie may be "".
func (e *env) do(method, path, cookie string, form url.Values, header map[string]string) (*http.Response, string) {
	e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: cookieName, Value: cookie})
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// login logs in as name and returns the session cookie and CSRF token.
func (e *env) login(name string) (cookie, csrf string) {
	e.t.Helper()
	resp, _ := e.do("POST", "/console/login", "", url.Values{"name": {name}, "token": {testToken}}, nil)
	if resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("login: %s", resp.Status)
	}
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			cookie = c.Value
		}
	}
	_, page := e.do("GET", "/console", cookie, nil, nil)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if cookie == "" || m == nil {
		e.t.Fatalf("login gave no session (cookie %q) or no CSRF token:\n%s", cookie, page)
	}
	return cookie, m[1]
}

// decideForm is the form the pending page posts.
func decideForm(csrf, hash, decision, reason string) url.Values {
	return url.Values{"csrf": {csrf}, "hash": {hash}, "decision": {decision}, "reason": {reason}}
}

func stillPending(t *testing.T, q *approval.Queue, id string) {
	t.Helper()
	if _, ok := q.Get(id); !ok {
		t.Fatalf("call %s was decided", id)
	}
}

func TestLoggedOutShowsNothing(t *testing.T) {
	e := newEnv(t, Options{})
	p := e.transfer("2500")
	for _, path := range []string{"/console", "/console/history", "/console/pins"} {
		resp, body := e.do("GET", path, "", nil, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login" {
			t.Errorf("GET %s logged out: %s to %q, want a redirect to the login page", path, resp.Status, resp.Header.Get("Location"))
		}
		if strings.Contains(body, "transfer_funds") || strings.Contains(body, p.Hash) {
			t.Errorf("GET %s logged out shows the call: %s", path, body)
		}
	}
	for _, path := range []string{"/console/pending", "/console/events"} {
		resp, body := e.do("GET", path, "", nil, nil)
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "transfer_funds") {
			t.Errorf("GET %s logged out: %s %q", path, resp.Status, body)
		}
	}
	// A made-up cookie is no session.
	if resp, _ := e.do("GET", "/console", "forged", nil, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a forged cookie: %s", resp.Status)
	}
	resp, _ := e.do("POST", "/console/approvals/"+p.ID, "", decideForm("x", p.Hash, "approve", ""), nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST decide logged out: %s", resp.Status)
	}
	stillPending(t, e.q, p.ID)
	// The login page itself shows nothing of the queue.
	if _, body := e.do("GET", "/console/login", "", nil, nil); strings.Contains(body, "transfer_funds") || !strings.Contains(body, `name="token"`) {
		t.Errorf("login page: %s", body)
	}
}

func TestLoginAndLogout(t *testing.T) {
	e := newEnv(t, Options{})
	p := e.transfer("2500")

	for _, tc := range []struct{ name, token, want string }{
		{"alice", "wrong", "not the admin token"},
		{"", testToken, "Give your name"},
		{"al<script>", testToken, "Give your name"},
		{"аlice", testToken, "Give your name"}, // Cyrillic а: approvers must not look alike
	} {
		resp, body := e.do("POST", "/console/login", "", url.Values{"name": {tc.name}, "token": {tc.token}}, nil)
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 || !strings.Contains(body, tc.want) {
			t.Errorf("login %q/%q: %s cookies %v, want 401 saying %q", tc.name, tc.token, resp.Status, resp.Cookies(), tc.want)
		}
	}

	resp, _ := e.do("POST", "/console/login", "", url.Values{"name": {"alice"}, "token": {testToken}}, nil)
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login set %d cookies", len(cookies))
	}
	ck := cookies[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure || ck.Path != "/console" || len(ck.Value) < 43 || ck.MaxAge <= 0 {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP, Path=/console, 256 bits", ck)
	}
	cookie, csrf := e.login("alice")
	_, page := e.do("GET", "/console", cookie, nil, nil)
	for _, want := range []string{"console:alice", p.ID, p.Hash, "Move money between accounts.", "level 4, Tier 2 (rule big-transfer)",
		"recipient is new", "sess-1", `&#34;amount&#34;: 2500`, "Approve</strong> runs <code>transfer_funds</code> once with exactly these arguments"} {
		if !strings.Contains(page, want) {
			t.Errorf("the pending page lacks %q", want)
		}
	}

	resp, _ = e.do("POST", "/console/logout", cookie, url.Values{"csrf": {csrf}}, nil)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || resp.Cookies()[0].MaxAge >= 0 {
		t.Fatalf("logout: %s %v", resp.Status, resp.Cookies())
	}
	if resp, _ := e.do("GET", "/console", cookie, nil, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the old cookie still works after logout: %s", resp.Status)
	}
	resp, _ = e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(csrf, p.Hash, "approve", ""), nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("decide after logout: %s", resp.Status)
	}
	stillPending(t, e.q, p.ID)
}

func TestSecureCookieOption(t *testing.T) {
	e := newEnv(t, Options{SecureCookie: true})
	resp, _ := e.do("POST", "/console/login", "", url.Values{"name": {"alice"}, "token": {testToken}}, nil)
	if c := resp.Cookies(); len(c) != 1 || !c[0].Secure {
		t.Fatalf("with SecureCookie: %v", c)
	}
}

func TestSessionExpires(t *testing.T) {
	e := newEnv(t, Options{SessionTTL: time.Nanosecond})
	resp, _ := e.do("POST", "/console/login", "", url.Values{"name": {"alice"}, "token": {testToken}}, nil)
	cookie := resp.Cookies()[0].Value
	if resp, _ := e.do("GET", "/console", cookie, nil, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("an expired session still works: %s", resp.Status)
	}
}

func TestCSRFRequired(t *testing.T) {
	e := newEnv(t, Options{})
	p := e.transfer("2500")
	cookie, csrf := e.login("alice")
	_, otherCSRF := e.login("bob")
	wrong := "x" + csrf[1:]
	if csrf[0] == 'x' {
		wrong = "y" + csrf[1:]
	}
	for name, token := range map[string]string{"missing": "", "wrong": wrong, "another session's": otherCSRF} {
		resp, body := e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(token, p.Hash, "approve", ""), nil)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "CSRF") {
			t.Errorf("%s CSRF token: %s", name, resp.Status)
		}
		stillPending(t, e.q, p.ID)
		if resp, _ := e.do("POST", "/console/logout", cookie, url.Values{"csrf": {token}}, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("logout with a %s CSRF token: %s", name, resp.Status)
		}
	}
	if resp, _ := e.do("GET", "/console", cookie, nil, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the session ended by a logout without CSRF token: %s", resp.Status)
	}
}

func TestDecisionNeedsTheHashShown(t *testing.T) {
	e := newEnv(t, Options{})
	p := e.transfer("2500")
	other := e.transfer("250000")
	cookie, csrf := e.login("alice")

	// The page of one call posted with the hash of another (or none).
	for _, hash := range []string{other.Hash, "", p.Hash + "0"} {
		resp, body := e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(csrf, hash, "approve", ""), nil)
		if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "Nothing was decided") {
			t.Errorf("hash %q: %s", hash, resp.Status)
		}
		stillPending(t, e.q, p.ID)
	}
	resp, _ := e.do("POST", "/console/approvals/apr_UNKNOWN", cookie, decideForm(csrf, p.Hash, "approve", ""), nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown id: %s", resp.Status)
	}
	resp, _ = e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(csrf, p.Hash, "maybe", ""), nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("decision maybe: %s", resp.Status)
	}
	stillPending(t, e.q, p.ID)

	done := make(chan approval.Decision, 1)
	go func() { done <- e.q.Wait(context.Background(), p.ID) }()
	resp, _ = e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(csrf, p.Hash, "approve", "checked the IBAN"), nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: %s", resp.Status)
	}
	if d := <-done; !d.Approved || d.Approver != "console:alice" || d.Reason != "checked the IBAN" {
		t.Fatalf("decision %+v, want approved by console:alice", d)
	}
	_, page := e.do("GET", "/console", cookie, nil, nil)
	if !strings.Contains(page, "Approved "+p.ID) {
		t.Error("no confirmation after approving")
	}
	// The same form again: the call is no longer pending, and the page
	// says who decided it.
	resp, body := e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(csrf, p.Hash, "approve", ""), nil)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "already <strong>approved</strong> by <strong>console:alice</strong>") {
		t.Errorf("replayed approval: %s", resp.Status)
	}

	go func() { done <- e.q.Wait(context.Background(), other.ID) }()
	e.do("POST", "/console/approvals/"+other.ID, cookie, decideForm(csrf, other.Hash, "deny", "too much"), nil)
	if d := <-done; d.Approved || d.Approver != "console:alice" || d.Reason != "too much" {
		t.Fatalf("decision %+v, want denied by console:alice", d)
	}
}

func TestHostAndOriginChecked(t *testing.T) {
	e := newEnv(t, Options{})
	p := e.transfer("2500")
	cookie, csrf := e.login("alice")
	self := e.srv.URL // http://127.0.0.1:PORT

	for _, host := range []string{"evil.example", "evil.example:80", "10.0.0.1"} {
		resp, body := e.do("GET", "/console/login", "", nil, map[string]string{"Host": host})
		if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "token") {
			t.Errorf("Host %s: %s", host, resp.Status)
		}
	}
	if resp, _ := e.do("GET", "/console", cookie, nil, map[string]string{"Host": "localhost:1"}); resp.StatusCode != http.StatusOK {
		t.Errorf("Host localhost: %s", resp.Status)
	}
	for _, origin := range []string{"http://evil.example", "null", "https://" + strings.TrimPrefix(self, "http://"), self + "/x", "http://localhost:1"} {
		resp, _ := e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(csrf, p.Hash, "approve", ""), map[string]string{"Origin": origin})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST with Origin %s: %s", origin, resp.Status)
		}
		resp, _ = e.do("POST", "/console/login", "", url.Values{"name": {"eve"}, "token": {testToken}}, map[string]string{"Origin": origin})
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("login with Origin %s: %s", origin, resp.Status)
		}
		if resp, _ := e.do("GET", "/console/events", cookie, nil, map[string]string{"Origin": origin}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("events with Origin %s: %s", origin, resp.Status)
		}
	}
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site"},                   // no Origin
		{"Origin": "null", "Sec-Fetch-Site": "cross-site"}, // a sandboxed frame or a no-referrer page elsewhere
		{"Origin": "null", "Sec-Fetch-Site": "same-site"},
	} {
		resp, _ := e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(csrf, p.Hash, "approve", ""), h)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST with %v: %s", h, resp.Status)
		}
	}
	stillPending(t, e.q, p.ID)
	go e.q.Wait(context.Background(), p.ID)
	// What Chromium sends with the console's own form (no-referrer pages).
	resp, _ := e.do("POST", "/console/login", "", url.Values{"name": {"bob"}, "token": {testToken}}, map[string]string{"Origin": "null", "Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the console's own login form: %s", resp.Status)
	}
	resp, _ = e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(csrf, p.Hash, "deny", ""), map[string]string{"Origin": self, "Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("same-origin POST: %s", resp.Status)
	}
}

var (
	inlineScript = regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`)
	inlineStyle  = regexp.MustCompile(`(?i)<style|\sstyle=|\son[a-z]+=|javascript:`)
)

func TestSecurityHeadersAndNoInlineCode(t *testing.T) {
	e := newEnv(t, Options{})
	e.transfer("2500")
	e.transfer("250000")
	cookie, _ := e.login("alice")
	check := func(path, cookie string, html bool) {
		t.Helper()
		resp, body := e.do("GET", path, cookie, nil, nil)
		h := resp.Header
		if h.Get("Content-Security-Policy") != CSP || h.Get("X-Content-Type-Options") != "nosniff" ||
			h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: headers %v", path, h)
		}
		if html && (inlineScript.MatchString(body) || inlineStyle.MatchString(body)) {
			t.Errorf("GET %s has inline script or style:\n%s", path, body)
		}
	}
	for _, path := range []string{"/console", "/console/history", "/console/pins", "/console/pending", "/console/login"} {
		check(path, cookie, true)
	}
	check("/console", "", false)             // the redirect
	check("/console/nothing", cookie, false) // a 404
	check("/console/static/console.js", "", false)
	check("/console/static/console.css", "", false)
	if resp, _ := e.do("GET", "/console/login", "", nil, map[string]string{"Host": "evil.example"}); resp.Header.Get("Content-Security-Policy") != CSP {
		t.Error("a refused request has no CSP")
	}
	if !strings.Contains(CSP, "default-src 'none'") || !strings.Contains(CSP, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", CSP)
	}
}

func TestEventsSignalNewCalls(t *testing.T) {
	e := newEnv(t, Options{})
	cookie, csrf := e.login("alice")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/console/events", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: cookie})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("events: %s %s", resp.Status, ct)
	}
	events := bufio.NewReader(resp.Body)
	next := func() string { // event name and data, one event
		t.Helper()
		var ev []string
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("event stream: %v (so far %q)", err, ev)
			}
			line = strings.TrimRight(line, "\n")
			if line == "" && len(ev) > 0 {
				return strings.Join(ev, " ")
			}
			if line != "" && !strings.HasPrefix(line, ":") {
				ev = append(ev, line)
			}
		}
	}
	if got := next(); got != "event: pending data: 0" {
		t.Fatalf("first event %q", got)
	}
	e.transfer("2500")
	if got := next(); got != "event: pending data: 1" {
		t.Fatalf("after a new call: %q", got)
	}
	_, list := e.do("GET", "/console/pending", cookie, nil, nil)
	if !strings.Contains(list, `id="pending-list"`) || !strings.Contains(list, "hash-of-2500") || strings.Contains(list, "<html") {
		t.Fatalf("the list fragment:\n%s", list)
	}
	e.do("POST", "/console/logout", cookie, url.Values{"csrf": {csrf}}, nil)
	e.transfer("1")
	if got := next(); got != "event: logout data: " {
		t.Fatalf("after logout: %q", got)
	}
}

// TestDiffBaselineIsTheLastApprovedCall: an attacker who sends the same
// call twice must not make the second card say "Same arguments"; each card
// is compared with what was last approved for the same user and tool and
// then ran. An approval whose call never ran is passed over, and named.
func TestDiffBaselineIsTheLastApprovedCall(t *testing.T) {
	e := newEnv(t, Options{})
	honest := e.transfer("2500")
	if err := e.q.Decide(honest.ID, true, "console:bob", "invoice 17"); err != nil {
		t.Fatal(err)
	}
	if err := e.q.MarkExecuted(t.Context(), honest.ID); err != nil {
		t.Fatal(err)
	}
	// Approved later, but its call failed upstream: not the baseline.
	failed := e.transfer("250000")
	if err := e.q.Decide(failed.ID, true, "console:carol", ""); err != nil {
		t.Fatal(err)
	}
	// Another user's approved call of the same tool is not the baseline.
	other := e.q.Submit(approval.Request{Upstream: "demo", Subject: "mallory", Tool: "transfer_funds",
		Arguments: []byte(`{"account_id":"ACC_9","amount":1,"recipient":"m@example.com"}`), Hash: "h-mallory"})
	if err := e.q.Decide(other.ID, true, "console:bob", ""); err != nil {
		t.Fatal(err)
	}
	if err := e.q.MarkExecuted(t.Context(), other.ID); err != nil {
		t.Fatal(err)
	}
	first, second := e.transfer("250000"), e.transfer("250000")
	e.q.Submit(approval.Request{Upstream: "demo", Subject: "alice", Tool: "send_mail",
		Arguments: []byte(`{"to":"vendor@example.com"}`), Hash: "h-mail"})
	cookie, _ := e.login("alice")
	_, page := e.do("GET", "/console", cookie, nil, nil)
	for _, p := range []approval.Pending{first, second} {
		card := cardOf(t, page, p.ID)
		for _, want := range []string{
			"Compared with the last approved call of transfer_funds for alice that ran: " + honest.ID + ", approved by console:bob",
			"; " + failed.ID + ", approved by console:carol at ",
			`<span class="d-del">-   &#34;amount&#34;: 2500,</span>`,
			`<span class="d-add">&#43;   &#34;amount&#34;: <span class="num">250<span class="grp">000</span></span>,</span>`,
		} {
			if !strings.Contains(card, want) {
				t.Errorf("the card of %s lacks %s\n%s", p.ID, want, card)
			}
		}
		if strings.Contains(card, "Same arguments") || strings.Contains(card, other.ID) {
			t.Errorf("the card of %s compares with a pending call, another user's, or one that did not run:\n%s", p.ID, card)
		}
	}
	if n := strings.Count(cardOf(t, page, first.ID), `class="d-add"`); n != 1 {
		t.Errorf("%d added lines, want 1 (only the amount changed)", n)
	}
	if mail := cardOf(t, page, "", "send_mail"); !strings.Contains(mail, "Compared with nothing: no call of send_mail on demo for alice has been approved and run before") {
		t.Errorf("a call with no approved predecessor:\n%s", mail)
	}
}

// cardOf cuts the <article> of call id (or, with id "", of the tool) out
// of a pending page.
func cardOf(t *testing.T, page, id string, tool ...string) string {
	t.Helper()
	needle := `id="call-` + id + `"`
	if id == "" {
		needle = `data-tool="` + tool[0] + `"`
	}
	i := strings.Index(page, needle)
	if i < 0 {
		t.Fatalf("no card %s %v on the page", id, tool)
	}
	j := strings.Index(page[i:], "</article>")
	return page[i : i+j]
}

// TestPendingRevealsDeception: bidi controls, invisible characters and
// look-alike letters are escaped inline in the card itself, with a warning.
func TestPendingRevealsDeception(t *testing.T) {
	e := newEnv(t, Options{})
	e.q.Submit(approval.Request{Upstream: "demo", Subject: "alice", Tool: "send_mail",
		Arguments: []byte("{\"cc\":\"a\u200b@example.com\",\"to\":\"\u202emoc.elpmaxe@rodnev\",\"via\":\"vendor@ex\u0430mple.com\"}"), Hash: "h-mail"})
	e.q.Submit(approval.Request{Upstream: "demo", Subject: "alice", Tool: "note",
		Arguments: []byte(`{"text":"Grüße aus Köln, 東京 Tokyo, привет"}`), Hash: "h-note"})
	cookie, _ := e.login("alice")
	_, page := e.do("GET", "/console", cookie, nil, nil)
	mail := cardOf(t, page, "", "send_mail")
	for _, want := range []string{
		`<mark class="esc esc-bidi" title="U+202E: a direction control">\u{202E}</mark>moc.elpmaxe@rodnev`,
		`a<mark class="esc esc-invisible" title="U+200B: an invisible character">\u{200B}</mark>@example.com`,
		`vendor@ex<mark class="esc esc-lookalike"`,
		`>\u{0430}</mark>mple.com`,
		`id="deception-`, "direction-changing characters", "invisible characters", "words that mix scripts",
	} {
		if !strings.Contains(mail, want) {
			t.Errorf("the card lacks %s\n%s", want, mail)
		}
	}
	if strings.ContainsAny(mail, "\u202e\u200b\u0430") {
		t.Error("the card draws a deceptive character as itself")
	}
	if note := cardOf(t, page, "", "note"); strings.Contains(note, "deception") || strings.Contains(note, "<mark") {
		t.Errorf("ordinary non-ASCII text was flagged:\n%s", note)
	}
}

func TestPinsPageIsHonest(t *testing.T) {
	e := newEnv(t, Options{})
	cookie, _ := e.login("alice")
	_, page := e.do("GET", "/console/pins", cookie, nil, nil)
	if !strings.Contains(page, "Tool pinning is off") || strings.Contains(page, "<table") {
		t.Fatalf("pins page:\n%s", page)
	}
}

// TestEnterHasNoDefaultDecision: a browser submits a form on Enter through
// its first submit button; in a decision form that button is disabled, so
// Enter submits nothing, with or without the script.
func TestEnterHasNoDefaultDecision(t *testing.T) {
	e := newEnv(t, Options{})
	p := e.transfer("2500")
	cookie, _ := e.login("alice")
	_, page := e.do("GET", "/console", cookie, nil, nil)
	card := cardOf(t, page, p.ID)
	first := regexp.MustCompile(`<button type="submit"[^>]*>`).FindString(card)
	if !strings.Contains(first, " disabled") || strings.Contains(first, `value="approve"`) || strings.Contains(first, `value="deny"`) {
		t.Errorf("the decision form's default button is %s, want a disabled one that decides nothing", first)
	}
}

// TestSensitiveApprovalNeedsTheGesture: a call of a level that needs the
// confirmation is approved only with the first characters of its
// parameters_hash, checked by the server whatever the page sent.
func TestSensitiveApprovalNeedsTheGesture(t *testing.T) {
	e := newEnv(t, Options{})
	hash := "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"
	p := e.q.Submit(approval.Request{Upstream: "demo", Subject: "alice", Tool: "wire", Arguments: []byte(`{"amount":10000}`),
		Hash: hash, Classification: 2, Tier: 2})
	low := e.transfer("5") // level 4: one click is enough
	cookie, csrf := e.login("alice")
	_, page := e.do("GET", "/console", cookie, nil, nil)
	if card := cardOf(t, page, p.ID); !strings.Contains(card, `name="confirm"`) || !strings.Contains(card, `data-hash-head="9F86D0"`) {
		t.Errorf("the sensitive card has no confirmation field:\n%s", card)
	}
	if strings.Contains(cardOf(t, page, low.ID), `name="confirm"`) {
		t.Error("a level-4 call asks for the confirmation")
	}
	for _, typed := range []string{"", "9f86d", "9f86d1", "9f86d0818"} {
		form := decideForm(csrf, hash, "approve", "")
		form.Set("confirm", typed)
		resp, body := e.do("POST", "/console/approvals/"+p.ID, cookie, form, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "type the first 6 characters of its parameters_hash") {
			t.Errorf("approve with confirmation %q: %s", typed, resp.Status)
		}
		stillPending(t, e.q, p.ID)
	}
	form := decideForm(csrf, hash, "approve", "checked")
	form.Set("confirm", " 9f86 d0 ")
	if resp, _ := e.do("POST", "/console/approvals/"+p.ID, cookie, form, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve with the right confirmation: %s", resp.Status)
	}
	if h := e.q.History(); len(h) != 1 || !h[0].Approved || h[0].ID != p.ID {
		t.Fatalf("history %+v", h)
	}
	if resp, _ := e.do("POST", "/console/approvals/"+low.ID, cookie, decideForm(csrf, low.Hash, "approve", ""), nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("approve a level-4 call with one click: %s", resp.Status)
	}
	// Denying never needs the gesture.
	deny := e.q.Submit(approval.Request{Upstream: "demo", Tool: "wire", Arguments: []byte(`{}`), Hash: hash, Classification: 1})
	if resp, _ := e.do("POST", "/console/approvals/"+deny.ID, cookie, decideForm(csrf, hash, "deny", ""), nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("deny a level-1 call: %s", resp.Status)
	}
}

func TestConfirmLevelsAreChecked(t *testing.T) {
	if _, err := New(Options{Queue: approval.New(time.Minute), Token: testToken, ConfirmLevels: []int{0}}); err == nil {
		t.Error("level 0 accepted")
	}
	e := newEnv(t, Options{ConfirmLevels: []int{}}) // turned off
	p := e.q.Submit(approval.Request{Upstream: "demo", Tool: "wire", Arguments: []byte(`{}`), Hash: "abcdef12", Classification: 1})
	cookie, csrf := e.login("alice")
	if resp, _ := e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(csrf, p.Hash, "approve", ""), nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("with the gesture turned off: %s", resp.Status)
	}
}

// TestLateDecisionSaysWhoDecided: the second of two operators is told who
// decided first, what, and when.
func TestLateDecisionSaysWhoDecided(t *testing.T) {
	e := newEnv(t, Options{})
	p := e.transfer("2500")
	cookie, csrf := e.login("alice")
	if err := e.q.Decide(p.ID, true, "console:bob", "invoice <17>"); err != nil {
		t.Fatal(err)
	}
	resp, body := e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(csrf, p.Hash, "deny", ""), nil)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("a late decision: %s", resp.Status)
	}
	for _, want := range []string{"Your decision was not recorded", "already <strong>approved</strong> by <strong>console:bob</strong>",
		"invoice &lt;17&gt;", time.Now().UTC().Format("2006-01-02")} {
		if !strings.Contains(body, want) {
			t.Errorf("the late decision's page lacks %q:\n%s", want, body)
		}
	}
	if h := e.q.History(); len(h) != 1 || !h[0].Approved {
		t.Errorf("history %+v", h)
	}
}

// TestTwoPersonRule: a call of a level that needs two approvers runs only
// once two different people approved it, and the card says who has.
func TestTwoPersonRule(t *testing.T) {
	q := approval.NewQueue(approval.Options{Timeout: time.Minute, Approvers: map[int]int{1: 2}})
	t.Cleanup(func() { q.Close() })
	e := newEnv(t, Options{Queue: q, ConfirmLevels: []int{}})
	p := q.Submit(approval.Request{Upstream: "demo", Subject: "alice", Tool: "wire", Arguments: []byte(`{"amount":1}`),
		Hash: "h-wire", Classification: 1, Tier: 3})
	alice, aliceCSRF := e.login("alice")
	bob, bobCSRF := e.login("bob")
	resp, _ := e.do("POST", "/console/approvals/"+p.ID, alice, decideForm(aliceCSRF, p.Hash, "approve", "ok"), nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("alice approves: %s", resp.Status)
	}
	stillPending(t, q, p.ID)
	_, page := e.do("GET", "/console", alice, nil, nil)
	card := cardOf(t, page, p.ID)
	for _, want := range []string{"1 of the 2 different approvers it needs", "runs only once 2 different people approve it",
		"Approved so far by console:alice (", "You approved it: another person must approve it now."} {
		if !strings.Contains(page, want) {
			t.Errorf("alice's page lacks %q", want)
		}
	}
	if !regexp.MustCompile(`value="approve" class="approve"[^>]* disabled data-voted="true">`).MatchString(card) {
		t.Error("alice can press Approve again")
	}
	resp, body := e.do("POST", "/console/approvals/"+p.ID, alice, decideForm(aliceCSRF, p.Hash, "approve", ""), nil)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "You already approved") {
		t.Errorf("alice approves twice: %s", resp.Status)
	}
	stillPending(t, q, p.ID)
	if _, page := e.do("GET", "/console", bob, nil, nil); strings.Contains(cardOf(t, page, p.ID), "You approved it") {
		t.Error("bob's page says he approved")
	}
	if resp, _ := e.do("POST", "/console/approvals/"+p.ID, bob, decideForm(bobCSRF, p.Hash, "approve", "agreed"), nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("bob approves: %s", resp.Status)
	}
	if h := q.History(); len(h) != 1 || !h[0].Approved || h[0].Approver != "console:alice, console:bob" {
		t.Errorf("history %+v", h)
	}
}

// flakyLoads is a memory backend whose Load fails while failing is set:
// a store that cannot say whether a call is waiting.
type flakyLoads struct {
	approval.Backend
	failing atomic.Bool
}

func (f *flakyLoads) Load(ctx context.Context, id string) (approval.Pending, *approval.Decision, error) {
	if f.failing.Load() {
		return approval.Pending{}, nil, errors.New("store unreachable")
	}
	return f.Backend.Load(ctx, id)
}

// TestUnreadableCallIsNotDecided: when the store cannot say what a call is
// (so neither its level nor its gesture can be checked), nothing is decided.
func TestUnreadableCallIsNotDecided(t *testing.T) {
	b := &flakyLoads{Backend: approval.NewMemoryBackend()}
	q := approval.NewQueue(approval.Options{Timeout: time.Minute, Backend: b})
	t.Cleanup(func() { q.Close() })
	e := newEnv(t, Options{Queue: q})
	p := q.Submit(approval.Request{Upstream: "demo", Tool: "wire", Arguments: []byte(`{}`), Hash: "abcdef0123", Classification: 1})
	cookie, csrf := e.login("alice")
	b.failing.Store(true)
	resp, _ := e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(csrf, p.Hash, "approve", ""), nil)
	b.failing.Store(false)
	if resp.StatusCode == http.StatusSeeOther {
		t.Fatalf("an approval without its gesture went through while the store could not be read: %s", resp.Status)
	}
	stillPending(t, q, p.ID)
}

// TestNoRawDeceptiveCharacterOnThePage: whatever field a bidi override hides
// in (tool, server, user, hash, reason), the pages draw it as an escape
// everywhere a person reads; only the hidden form values keep the bytes.
func TestNoRawDeceptiveCharacterOnThePage(t *testing.T) {
	e := newEnv(t, Options{})
	const rlo = "\u202e"
	p := e.q.Submit(approval.Request{Upstream: "demo" + rlo, Subject: "alice" + rlo, Session: "s" + rlo, Tool: "pay" + rlo + "x",
		Arguments: []byte(`{"to":"a` + rlo + `"}`), Hash: "h" + rlo + "ash", Description: "d" + rlo, Findings: []string{"f" + rlo}})
	done := e.q.Submit(approval.Request{Upstream: "demo", Subject: "alice", Tool: "pay" + rlo, Arguments: []byte(`{}`), Hash: "h2"})
	if err := e.q.Decide(done.ID, false, "console:bob", "because"+rlo); err != nil {
		t.Fatal(err)
	}
	cookie, csrf := e.login("alice")
	hidden := regexp.MustCompile(`<input type="hidden"[^>]*>`)
	for _, path := range []string{"/console", "/console/history"} {
		_, page := e.do("GET", path, cookie, nil, nil)
		if visible := hidden.ReplaceAllString(page, ""); strings.Contains(visible, rlo) {
			i := strings.Index(visible, rlo)
			t.Errorf("%s draws U+202E as itself: …%s…", path, visible[max(0, i-80):min(len(visible), i+20)])
		}
	}
	resp, _ := e.do("POST", "/console/approvals/"+p.ID, cookie, decideForm(csrf, p.Hash, "deny", ""), nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("deny: %s", resp.Status)
	}
	if _, page := e.do("GET", "/console", cookie, nil, nil); strings.Contains(page, rlo) || !strings.Contains(page, `pay\u{202E}x on demo\u{202E}`) {
		t.Errorf("the confirmation draws U+202E as itself or not at all:\n%s", page)
	}
}
