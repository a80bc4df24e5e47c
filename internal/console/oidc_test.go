package console_test

// A local OpenID provider for the console's OIDC login: discovery, an
// authorization endpoint that logs in one user at once, a token endpoint
// that checks PKCE, and its JWKS. It signs ID tokens with Ed25519.

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/console"
)

type testIssuer struct {
	t        *testing.T
	srv      *httptest.Server
	key      ed25519.PrivateKey
	clientID string
	subject  string // whom /authorize logs in
	base     string // the issuer's URL; "" means the server's own

	mu    sync.Mutex
	codes map[string]url.Values // the authorization request of each code
	// tamper, when set, changes the claims of the next ID token.
	tamper func(map[string]any)
}

func newTestIssuer(t *testing.T, subject string) *testIssuer {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &testIssuer{t: t, key: key, clientID: "warden-console", subject: subject, codes: map[string]url.Values{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		u := is.url()
		json.NewEncoder(w).Encode(map[string]string{"issuer": u, "authorization_endpoint": u + "/authorize",
			"token_endpoint": u + "/token", "jwks_uri": u + "/jwks"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "k1", Algorithm: "EdDSA", Use: "sig"}}})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("response_type") != "code" || q.Get("client_id") != is.clientID || q.Get("code_challenge_method") != "S256" ||
			q.Get("code_challenge") == "" || q.Get("state") == "" || q.Get("nonce") == "" || !strings.Contains(q.Get("scope"), "openid") {
			http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		code := rand.Text()
		is.mu.Lock()
		is.codes[code] = q
		is.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		is.mu.Lock()
		authz := is.codes[r.PostForm.Get("code")]
		delete(is.codes, r.PostForm.Get("code"))
		tamper := is.tamper
		is.tamper = nil
		is.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		switch {
		case authz == nil:
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != authz.Get("code_challenge"):
			http.Error(w, `{"error":"invalid_grant","error_description":"PKCE"}`, http.StatusBadRequest)
			return
		case r.PostForm.Get("redirect_uri") != authz.Get("redirect_uri") || r.PostForm.Get("grant_type") != "authorization_code":
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		claims := map[string]any{"iss": is.url(), "sub": is.subject, "aud": is.clientID, "nonce": authz.Get("nonce"),
			"iat": time.Now().Unix(), "exp": time.Now().Add(5 * time.Minute).Unix()}
		if tamper != nil {
			tamper(claims)
		}
		json.NewEncoder(w).Encode(map[string]string{"access_token": "at", "token_type": "Bearer", "id_token": is.sign(claims)})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func (is *testIssuer) url() string {
	if is.base != "" {
		return is.base
	}
	return is.srv.URL
}

func (is *testIssuer) sign(claims map[string]any) string {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: is.key}, (&jose.SignerOptions{}).WithHeader("kid", "k1").WithType("JWT"))
	if err != nil {
		is.t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		is.t.Fatal(err)
	}
	return tok
}

// oidcConsole serves a console that logs in through is.
func oidcConsole(t *testing.T, is *testIssuer, q *approval.Queue) string {
	t.Helper()
	base, _ := consoleServerWith(t, q, func(base string) console.Options {
		return console.Options{OIDC: &console.OIDCOptions{Issuer: is.url(), ClientID: is.clientID, RedirectURL: base + "/console/oidc/callback"}}
	})
	return base
}

// browserClient is an HTTP client with a cookie jar that follows
// redirects, as a browser would (without SameSite rules).
func browserClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 10 * time.Second}
}

func TestOIDCLoginWithPKCE(t *testing.T) {
	is := newTestIssuer(t, "alice@idp")
	q := approval.New(time.Minute)
	base := oidcConsole(t, is, q)
	c := browserClient(t)
	resp, err := c.Get(base + "/console/oidc/start")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The callback page sends the browser on; the session is live.
	page := getBody(t, c, base+"/console")
	if !strings.Contains(page, `id="approver">console:oidc:alice@idp<`) {
		t.Fatalf("after the OIDC login the console shows:\n%s", page)
	}

	// A callback replayed, from another browser, or with a bad token fails.
	for name, tc := range map[string]struct {
		tamper func(map[string]any)
		want   string
	}{
		"nonce":    {func(c map[string]any) { c["nonce"] = "other" }, "nonce is not this login"},
		"audience": {func(c map[string]any) { c["aud"] = "another-client" }, "not meant for this server"},
		"expired":  {func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }, "not valid now"},
	} {
		is.mu.Lock()
		is.tamper = tc.tamper
		is.mu.Unlock()
		c := browserClient(t)
		body := getBody(t, c, base+"/console/oidc/start")
		if !strings.Contains(body, tc.want) || strings.Contains(body, `id="approver"`) {
			t.Errorf("%s: the login page says\n%s\nwant %q", name, body, tc.want)
		}
	}
	// Login CSRF: a callback that another browser started.
	noFollow := browserClient(t)
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err = noFollow.Get(base + "/console/oidc/start")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	authz, err := noFollow.Get(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	authz.Body.Close()
	victim := browserClient(t)
	if body := getBody(t, victim, authz.Header.Get("Location")); !strings.Contains(body, "started in another browser") {
		t.Errorf("a callback from another browser:\n%s", body)
	}
}

// TestBreakGlassLogin: with OIDC configured, the admin token still logs in,
// and decisions say it was a break-glass login.
func TestBreakGlassLogin(t *testing.T) {
	is := newTestIssuer(t, "alice@idp")
	q := approval.New(time.Minute)
	base := oidcConsole(t, is, q)
	c := browserClient(t)
	if page := getBody(t, c, base+"/console/login"); !strings.Contains(page, `href="/console/oidc/start"`) || !strings.Contains(page, "Break-glass login") {
		t.Errorf("the login page does not offer both logins:\n%s", page)
	}
	resp, err := c.PostForm(base+"/console/login", url.Values{"name": {"ops"}, "token": {safetyToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if page := getBody(t, c, base+"/console"); !strings.Contains(page, `id="approver">console:break-glass:ops<`) {
		t.Errorf("a break-glass login shows as:\n%s", page)
	}
}

func getBody(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}
