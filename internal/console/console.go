// Package console is warden's approval console: web pages on the admin
// listener where a person sees a held tool call exactly as it will run, and
// approves or denies it.
//
//	browser ──► admin listener (loopback) ──► /console/...  (this package)
//	                                     └──► /v1/approvals (approval.Handler)
//
//	GET  /console                  pending calls (login required)
//	GET  /console/pending          the pending list alone, for live updates
//	GET  /console/events           server-sent events: "pending" when the queue changes
//	POST /console/approvals/{id}   decide: csrf, hash (the parameters_hash shown), decision, reason
//	GET  /console/history          outcomes, searchable; audit-chain status per record
//	GET  /console/pins             tool pins: pinned definitions, changed ones waiting, with diffs
//	POST /console/pins/decide      approve or reject a changed definition (its exact new hash)
//	GET  /console/login            POST /console/login (name, token)   POST /console/logout
//	GET  /console/oidc/start       GET /console/oidc/callback: OIDC login (oidc.go)
//	GET  /console/static/...       the style sheet and the script
//
// The pages are rendered on the server with html/template from files
// embedded in the binary; the script only listens for events, merges new
// calls into the page and handles keyboard shortcuts.
//
// # Security
//
// A person logs in with a display name and the admin token, and gets a
// session cookie (random 256-bit id, HttpOnly, SameSite=Strict, Secure over
// TLS or with Options.SecureCookie); sessions live in memory and expire
// after Options.SessionTTL. Every decision is recorded as made by
// "console:<name>". Every POST carries the session's CSRF token, and a
// decision also carries the parameters_hash that was on the page: the queue
// refuses it if that is not the pending call's hash (approval.DecideExact),
// so a page cannot be replayed onto other arguments. Every response carries
// a strict Content-Security-Policy (no inline script or style), and requests
// are refused unless their Host is a loopback name and their Origin, when
// sent, is the console's own. Logged out, pages redirect to the login page
// and show nothing; the event stream and the list answer 401.
//
// Approval is safe by construction (issue 19): Enter never decides (a
// decision form's default button is disabled); caller-controlled text is
// drawn with bidi controls, invisible characters and look-alike letters
// escaped, and a warning on the card (reveal.go); the diff compares with the
// last approved call; calls of Options.ConfirmLevels need the start of
// their parameters_hash typed, checked here; the queue enforces the
// two-person rule; a decision that lost a race says who won; failed logins
// back off per client (ratelimit.go); and with Options.OIDC people log in
// through an identity provider, the admin token becoming a break-glass
// login (oidc.go).
//
// A Console is safe for concurrent use: it is immutable after New except for
// its session store, login limiter and OIDC flows, each with its own lock.
package console

import (
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/pin"
)

//go:embed assets/templates/*.html assets/static/*
var assets embed.FS

// CSP is the Content-Security-Policy of every console response.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Options configures a Console. Queue and Token are required; the zero value
// of every other field is the safe setting.
type Options struct {
	// Queue is the approval queue the console shows and decides on.
	Queue *approval.Queue
	// Token is the admin token a person logs in with.
	Token string
	// Pins, when tool pinning is on, is shown on the pins page, where a
	// person approves or rejects changed tool definitions.
	Pins *pin.Pinner
	// VerifyJWT, when set, also lets a person log in with a JWT from the
	// gateway's configured issuer (gateway.auth) instead of the admin token:
	// it returns the token's subject, which becomes the approver's
	// identity ("console:jwt:<subject>"), or why the token is refused.
	VerifyJWT func(token string) (subject string, err error)
	// Audit, when set, lets the history page show each outcome's audit
	// record and whether the hash chain up to it is intact. Each history
	// page view then scans the whole log once.
	Audit *audit.Log
	// SessionTTL is how long a login lasts; 0 means 8 hours.
	SessionTTL time.Duration
	// LoginClock is the clock of the login rate limit (ratelimit.go); nil
	// means time.Now. Tests stop it to see a backoff that does not run
	// out while a browser types.
	LoginClock func() time.Time
	// SecureCookie marks the session cookie Secure even when the request
	// did not arrive over TLS: set it when a TLS-terminating proxy on the
	// same host serves the console. Over TLS the cookie is always Secure.
	SecureCookie bool
	// OIDC, when set, lets people log in through an OpenID provider
	// (authorization code with PKCE): decisions are then recorded as
	// "console:oidc:<sub>", and an admin-token login as
	// "console:break-glass:<name>".
	OIDC *OIDCOptions
	// ConfirmLevels are the classification levels (1, most sensitive, to
	// 5) whose calls need a deliberate gesture before Approve: the person
	// types the first ConfirmChars characters of the parameters_hash shown.
	// The server refuses an approval without them, whatever the page did.
	// nil means DefaultConfirmLevels, the levels of Tier 2 and above.
	ConfirmLevels []int
	// Logger receives logins, failed logins and decisions; nil discards.
	Logger *slog.Logger
}

// DefaultConfirmLevels are the classification levels that need the
// confirmation gesture by default: 1 to 3, which require Tier 2 or 3.
var DefaultConfirmLevels = []int{1, 2, 3}

// ConfirmChars is how many leading characters of the parameters_hash the
// confirmation gesture asks for.
const ConfirmChars = 6

// Console is the approval console's http.Handler.
type Console struct {
	// immutable after New
	q         *approval.Queue
	token     []byte
	verifyJWT func(string) (string, error)
	pins      *pin.Pinner
	audit     *audit.Log
	secure    bool
	confirm   map[int]bool // classification levels that need the gesture
	oidc      *oidcLogin   // nil without OIDC; has its own lock
	log       *slog.Logger
	pages     map[string]*template.Template
	mux       *http.ServeMux

	sessions *sessionStore // has its own lock
	logins   *loginLimiter // has its own lock
}

// New returns the console for opts.
func New(opts Options) (*Console, error) {
	if opts.Queue == nil {
		return nil, errors.New("console: Options.Queue is required")
	}
	if len(opts.Token) < 16 {
		return nil, errors.New("console: Options.Token must be the admin token (at least 16 characters)")
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 8 * time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ConfirmLevels == nil {
		opts.ConfirmLevels = DefaultConfirmLevels
	}
	confirm := map[int]bool{}
	for _, l := range opts.ConfirmLevels {
		if l < 1 || l > 5 {
			return nil, fmt.Errorf("console: Options.ConfirmLevels: level %d is not 1..5", l)
		}
		confirm[l] = true
	}
	var oidc *oidcLogin
	if opts.OIDC != nil {
		var err error
		if oidc, err = newOIDCLogin(*opts.OIDC); err != nil {
			return nil, err
		}
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{q: opts.Queue, token: []byte(opts.Token), verifyJWT: opts.VerifyJWT, pins: opts.Pins, audit: opts.Audit, secure: opts.SecureCookie,
		confirm: confirm, oidc: oidc, log: opts.Logger, pages: pages, sessions: newSessionStore(opts.SessionTTL), logins: newLoginLimiter(loginClock(opts.LoginClock))}
	static, err := fs.Sub(assets, "assets/static")
	if err != nil {
		return nil, err
	}
	m := http.NewServeMux()
	files := http.StripPrefix("/console/static/", http.FileServerFS(static))
	m.HandleFunc("GET /console/static/{file}", func(w http.ResponseWriter, r *http.Request) {
		files.ServeHTTP(w, r) // one file; no directory listings
	})
	m.HandleFunc("GET /console/login", c.loginPage)
	m.HandleFunc("POST /console/login", c.login)
	m.HandleFunc("GET /console/oidc/start", c.oidcStart)
	m.HandleFunc("GET /console/oidc/callback", c.oidcCallback)
	m.HandleFunc("POST /console/logout", c.requireSession(c.logout))
	m.HandleFunc("GET /console", c.requireSession(c.pendingPage))
	m.HandleFunc("GET /console/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console", http.StatusSeeOther)
	})
	m.HandleFunc("GET /console/pending", c.requireSession(c.pendingList))
	m.HandleFunc("GET /console/events", c.requireSession(c.events))
	m.HandleFunc("POST /console/approvals/{id}", c.requireSession(c.decide))
	m.HandleFunc("GET /console/history", c.requireSession(c.historyPage))
	m.HandleFunc("GET /console/pins", c.requireSession(c.pinsPage))
	m.HandleFunc("POST /console/pins/decide", c.requireSession(c.decidePin))
	m.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not found", http.StatusNotFound)
	})
	c.mux = m
	return c, nil
}

// ServeHTTP serves the console. Mount it at "/console" and "/console/".
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, "/console/static/") {
		h.Set("Cache-Control", "no-store")
	}
	if !loopbackHost(r.Host) {
		http.Error(w, "host not allowed: the console answers loopback names only", http.StatusForbidden)
		return
	}
	if reason := c.foreign(r); reason != "" {
		c.log.Warn("console: request refused", "reason", reason, "method", r.Method, "path", r.URL.Path, "origin", r.Header.Get("Origin"))
		http.Error(w, "forbidden: "+reason, http.StatusForbidden)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// foreign returns why r does not come from the console's own pages, or "".
//
// An Origin, when present, must be the console's own scheme, host and port.
// The exception is "Origin: null", which is what a browser sends with a form
// POST from a page whose Referrer-Policy is no-referrer, as the console's
// own pages are: it is accepted only with "Sec-Fetch-Site: same-origin", a
// header that pages cannot set (a cross-site form, or a sandboxed frame,
// sends "cross-site"). A POST without Origin is refused if the browser says
// it is cross-site. The CSRF token is checked in any case.
func (c *Console) foreign(r *http.Request) string {
	site := r.Header.Get("Sec-Fetch-Site")
	if o := r.Header.Get("Origin"); o == "null" {
		if site != "same-origin" {
			return "origin null from outside this console"
		}
		return ""
	} else if o != "" {
		u, err := url.Parse(o)
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		if err != nil || u.Scheme != scheme || u.Host != r.Host || u.Path != "" || !loopbackHost(u.Host) {
			return "origin " + o + " is not this console"
		}
		return ""
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		switch site {
		case "", "same-origin", "none":
		default:
			return "cross-site request"
		}
	}
	return ""
}

// loopbackHost reports whether hostport (a Host header) names a loopback
// host: localhost, 127.0.0.0/8 or ::1.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// validToken reports whether tok is the admin token, in constant time.
func (c *Console) validToken(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), c.token) == 1
}

// loginClock is clock, or time.Now when nil.
func loginClock(clock func() time.Time) func() time.Time {
	if clock == nil {
		return time.Now
	}
	return clock
}
