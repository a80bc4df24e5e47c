package console

// OIDC login: the authorization code flow with PKCE (RFC 7636, S256)
// against the configured issuer, so that decisions carry an identity the
// issuer vouches for ("console:oidc:<sub>").
//
//	browser ─ GET /console/oidc/start ──► 303 issuer/authorize?code_challenge=S256(verifier)&state&nonce
//	        ◄──────────────────────────── (the person logs in at the issuer)
//	        ─ GET /console/oidc/callback?code&state
//	            console ─ POST token endpoint (code, code_verifier) ─► id_token
//	            checks: signature (issuer's JWKS), iss, aud = client id, exp, nonce
//	        ◄ 200 "signed in", then /console (same-site, so the Strict cookie is sent)
//
// The state is kept on the server (at most maxFlows, ten minutes each) and
// bound to the browser that started the flow by a random cookie whose hash
// it holds: a callback from another browser (login CSRF) is refused. With
// OIDC configured, the admin token still logs in, as a break-glass login
// recorded as "console:break-glass:<name>".

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/authn"
)

// OIDCOptions configures OIDC login.
type OIDCOptions struct {
	// Issuer is the OpenID provider (its discovery document is at
	// Issuer/.well-known/openid-configuration).
	Issuer string
	// ClientID is the console's client at the issuer; ID tokens must name
	// it as their audience.
	ClientID string
	// ClientSecret, for a confidential client, is sent to the token
	// endpoint (client_secret_post); "" for a public client, which PKCE
	// protects.
	ClientSecret string
	// RedirectURL is the console's callback as the browser reaches it,
	// e.g. http://127.0.0.1:8788/console/oidc/callback; it must be
	// registered at the issuer.
	RedirectURL string
	// Client talks to the issuer; nil means one with a 10 s timeout that
	// follows no redirects.
	Client *http.Client
}

const (
	flowCookie = "warden_console_oidc"
	flowTTL    = 10 * time.Minute
	maxFlows   = 256
)

// oidcLogin is the console's OIDC client. Its metadata is discovered at the
// first login, and again after a failure.
type oidcLogin struct {
	opts OIDCOptions // immutable

	mu    sync.Mutex
	meta  *oidcMeta            // guarded by mu; nil until discovered
	auth  *authn.Authenticator // verifies ID tokens; guarded by mu
	flows map[string]*oidcFlow // by state; guarded by mu
}

type oidcMeta struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	JWKSURI               string `json:"jwks_uri"`
}

type oidcFlow struct {
	verifier, nonce string
	browser         [32]byte // SHA-256 of the flow cookie
	expires         time.Time
}

func newOIDCLogin(o OIDCOptions) (*oidcLogin, error) {
	if o.Issuer == "" || o.ClientID == "" || o.RedirectURL == "" {
		return nil, errors.New("console: OIDC needs Issuer, ClientID and RedirectURL")
	}
	if u, err := url.Parse(o.RedirectURL); err != nil || !strings.HasSuffix(u.Path, "/console/oidc/callback") || !loopbackHost(u.Host) {
		return nil, fmt.Errorf("console: OIDC RedirectURL %q must be the console's /console/oidc/callback on a loopback host", o.RedirectURL)
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return &oidcLogin{opts: o, flows: map[string]*oidcFlow{}}, nil
}

// discover returns the issuer's metadata and token verifier.
func (o *oidcLogin) discover(ctx context.Context) (*oidcMeta, *authn.Authenticator, error) {
	o.mu.Lock()
	meta, auth := o.meta, o.auth
	o.mu.Unlock()
	if meta != nil {
		return meta, auth, nil
	}
	var m oidcMeta
	if err := o.getJSON(ctx, strings.TrimRight(o.opts.Issuer, "/")+"/.well-known/openid-configuration", &m); err != nil {
		return nil, nil, err
	}
	if m.Issuer != o.opts.Issuer || m.AuthorizationEndpoint == "" || m.TokenEndpoint == "" || m.JWKSURI == "" {
		return nil, nil, fmt.Errorf("the issuer's discovery document names issuer %q (want %q) or lacks an endpoint", m.Issuer, o.opts.Issuer)
	}
	auth, err := authn.New(authn.Config{Issuer: m.Issuer, Audience: o.opts.ClientID, Keys: authn.NewRemoteKeys(m.JWKSURI, 0)})
	if err != nil {
		return nil, nil, err
	}
	o.mu.Lock()
	o.meta, o.auth = &m, auth
	o.mu.Unlock()
	return &m, auth, nil
}

func (o *oidcLogin) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := o.opts.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// start begins a login: it remembers the flow and returns where to send
// the browser, and the flow cookie's value.
func (o *oidcLogin) start(ctx context.Context) (redirect, cookie string, err error) {
	meta, _, err := o.discover(ctx)
	if err != nil {
		return "", "", err
	}
	state, verifier, nonce, cookie := randomToken(), randomToken(), randomToken(), randomToken()
	challenge := sha256.Sum256([]byte(verifier))
	now := time.Now()
	o.mu.Lock()
	for s, f := range o.flows {
		if now.After(f.expires) {
			delete(o.flows, s)
		}
	}
	if len(o.flows) >= maxFlows {
		o.mu.Unlock()
		return "", "", errors.New("too many logins in progress; try again in a few minutes")
	}
	o.flows[state] = &oidcFlow{verifier: verifier, nonce: nonce, browser: sha256.Sum256([]byte(cookie)), expires: now.Add(flowTTL)}
	o.mu.Unlock()
	q := url.Values{"response_type": {"code"}, "client_id": {o.opts.ClientID}, "redirect_uri": {o.opts.RedirectURL},
		"scope": {"openid"}, "state": {state}, "nonce": {nonce},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(challenge[:])}, "code_challenge_method": {"S256"}}
	sep := "?"
	if strings.Contains(meta.AuthorizationEndpoint, "?") {
		sep = "&"
	}
	return meta.AuthorizationEndpoint + sep + q.Encode(), cookie, nil
}

// finish completes a login from the callback's query and the flow cookie,
// and returns the issuer-verified subject.
func (o *oidcLogin) finish(ctx context.Context, query url.Values, cookie string) (string, error) {
	if e := query.Get("error"); e != "" {
		return "", fmt.Errorf("the issuer refused the login: %s %s", e, query.Get("error_description"))
	}
	state := query.Get("state")
	o.mu.Lock()
	f := o.flows[state]
	delete(o.flows, state) // one use, whatever happens
	o.mu.Unlock()
	if f == nil || time.Now().After(f.expires) {
		return "", errors.New("this login is unknown or expired (over 10 minutes, or already used); start again")
	}
	got := sha256.Sum256([]byte(cookie))
	if subtle.ConstantTimeCompare(got[:], f.browser[:]) != 1 {
		return "", errors.New("this login was started in another browser; start again here")
	}
	meta, auth, err := o.discover(ctx)
	if err != nil {
		return "", err
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {query.Get("code")}, "redirect_uri": {o.opts.RedirectURL},
		"client_id": {o.opts.ClientID}, "code_verifier": {f.verifier}}
	if o.opts.ClientSecret != "" {
		form.Set("client_secret", o.opts.ClientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, meta.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := o.opts.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("the token endpoint: %w", err)
	}
	defer resp.Body.Close()
	var tok struct {
		IDToken string `json:"id_token"`
		Error   string `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&tok); err != nil || resp.StatusCode != http.StatusOK || tok.IDToken == "" {
		return "", fmt.Errorf("the token endpoint answered %s %s without an ID token", resp.Status, tok.Error)
	}
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+tok.IDToken)
	p, fail := auth.Authenticate(r)
	if fail != nil {
		return "", fmt.Errorf("the ID token is not valid: %s", fail.Message)
	}
	if nonce, err := claim(tok.IDToken, "nonce"); err != nil || subtle.ConstantTimeCompare([]byte(nonce), []byte(f.nonce)) != 1 {
		return "", errors.New("the ID token's nonce is not this login's")
	}
	return p.Subject, nil
}

// claim reads a string claim of a JWT whose signature was verified.
func claim(jwt, name string) (string, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "", errors.New("not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", err
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", err
	}
	s, _ := claims[name].(string)
	return s, nil
}

// oidcStart sends the browser to the issuer.
func (c *Console) oidcStart(w http.ResponseWriter, r *http.Request) {
	if c.oidc == nil {
		http.Error(w, "OIDC login is not configured", http.StatusNotFound)
		return
	}
	redirect, cookie, err := c.oidc.start(r.Context())
	if err != nil {
		c.log.Warn("console: OIDC login cannot start", "err", err)
		c.render(w, r, http.StatusBadGateway, "login", page{Title: "Log in", Data: c.loginData("", "Logging in through the identity provider failed: "+err.Error())})
		return
	}
	// Lax, not Strict: it must come back with the issuer's redirect.
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: cookie, Path: "/console/oidc", MaxAge: int(flowTTL / time.Second),
		HttpOnly: true, Secure: c.secure || r.TLS != nil, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, redirect, http.StatusSeeOther)
}

// oidcCallback completes the login and starts a session.
func (c *Console) oidcCallback(w http.ResponseWriter, r *http.Request) {
	if c.oidc == nil {
		http.Error(w, "OIDC login is not configured", http.StatusNotFound)
		return
	}
	ck, _ := r.Cookie(flowCookie)
	cookie := ""
	if ck != nil {
		cookie = ck.Value
	}
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Path: "/console/oidc", MaxAge: -1, HttpOnly: true,
		Secure: c.secure || r.TLS != nil, SameSite: http.SameSiteLaxMode})
	client := clientOf(r)
	if d := c.logins.wait(client); d > 0 {
		c.tooMany(w, r, "", d)
		return
	}
	sub, err := c.oidc.finish(r.Context(), r.URL.Query(), cookie)
	if err != nil {
		c.logins.failed(client)
		c.log.Warn("console: failed OIDC login", "remote", r.RemoteAddr, "err", err)
		c.render(w, r, http.StatusUnauthorized, "login", page{Title: "Log in", Data: c.loginData("", "Login through the identity provider failed: "+err.Error())})
		return
	}
	c.logins.succeeded(client)
	id, s := c.sessions.create(sub)
	s.oidc = sub
	c.setCookie(w, r, id, int(time.Until(s.expires).Seconds()))
	c.log.Info("console: login", "approver", s.approver(), "remote", r.RemoteAddr)
	// A page, not a redirect: the navigation from it to /console is
	// same-site, so the browser sends the new SameSite=Strict cookie.
	c.render(w, r, http.StatusOK, "message", page{Title: "Signed in", Refresh: "/console", User: s.approver(),
		Data: "Signed in as " + s.approver() + ". Opening the pending calls…"})
}
