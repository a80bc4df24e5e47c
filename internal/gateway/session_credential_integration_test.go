//go:build integration

package gateway_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// credentialWorld is a gateway with gateway.auth and a session_credential
// upstream (the demo server), which records every Authorization header it
// is sent.
type credentialWorld struct {
	t        *testing.T
	endpoint string // the gateway's MCP URL
	base     string // the gateway's URL
	ring     *zerotrust.KeyRing
	token    func(sub string) string // a client bearer token of the IdP

	mu       sync.Mutex
	received []string // Authorization values the upstream was sent
}

const credentialPublicURL = "https://gw.example.com"

func newCredentialWorld(t *testing.T, idle time.Duration) *credentialWorld {
	t.Helper()
	w := &credentialWorld{t: t}
	dir := t.TempDir()
	idpKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &idpKey.PublicKey, KeyID: "idp-1", Algorithm: "ES256", Use: "sig"}}})
	jwksPath := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksPath, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	const iss, aud = "https://idp.example.com", credentialPublicURL + "/mcp"
	w.token = func(sub string) string {
		s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: idpKey}, (&jose.SignerOptions{}).WithHeader("kid", "idp-1"))
		tok, err := jwt.Signed(s).Claims(map[string]any{"iss": iss, "aud": aud, "sub": sub, "exp": time.Now().Add(time.Hour).Unix()}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	server := demoserver.New(demoserver.Options{Root: t.TempDir(), Ledger: demoserver.NewLedger(), Env: func() []string { return nil }})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	up := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.received = append(w.received, r.Header.Values("Authorization")...)
		w.mu.Unlock()
		sdk.ServeHTTP(rw, r)
	}))
	t.Cleanup(up.Close)

	keysDir := filepath.Join(dir, "data")
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(keysDir))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		t.Fatal(err)
	}
	w.ring = ring
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  auth: {issuer: %q, audience: %q, jwks_file: %q}
  zero_trust: {data_dir: %q, store: memory, public_url: %q}
  limits: {session_idle_timeout: %s}
  upstreams:
    - name: demo
      url: %s
      require_token: [transfer_funds]
      session_credential: {ttl: 1m}
`, iss, aud, jwksPath, keysDir, credentialPublicURL, idle, up.URL))
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	w.base, w.endpoint = srv.URL, srv.URL+"/mcp"
	return w
}

// connect opens a session as sub; without stream, the client opens no
// standalone SSE stream (which would keep the session from idling).
func (w *credentialWorld) connect(sub string, stream bool) *mcp.ClientSession {
	w.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, nil)
	s, err := c.Connect(testCtx(w.t), &mcp.StreamableClientTransport{Endpoint: w.endpoint, DisableStandaloneSSE: !stream,
		HTTPClient: &http.Client{Transport: bearer{w.token(sub)}}}, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { s.Close() }) // before the gateway's cleanup, which waits for its sessions
	if _, err := s.ListTools(testCtx(w.t), nil); err != nil {
		w.t.Fatal(err)
	}
	return s
}

// credentials returns the credentials the upstream received, verified with
// the JWKS the gateway serves, by session.
func (w *credentialWorld) credentials() map[string][]*zerotrust.SessionClaims {
	w.t.Helper()
	resp, err := http.Get(w.base + "/.well-known/jwks.json")
	if err != nil {
		w.t.Fatal(err)
	}
	var set jose.JSONWebKeySet
	err = json.NewDecoder(resp.Body).Decode(&set)
	resp.Body.Close()
	if err != nil {
		w.t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string][]*zerotrust.SessionClaims{}
	for _, v := range w.received {
		tok, ok := strings.CutPrefix(v, "Bearer ")
		if !ok {
			w.t.Fatalf("the upstream was sent Authorization %q, not a bearer credential", v)
		}
		c, err := zerotrust.VerifySession(jwksKeys(set), tok, credentialPublicURL, time.Now(), 0)
		if err != nil {
			w.t.Fatalf("the upstream was sent a credential that does not verify with the JWKS: %v", err)
		}
		c2 := *c
		out[c.Session] = append(out[c.Session], &c2)
	}
	return out
}

// tokenOf returns the last credential the upstream received for session.
func (w *credentialWorld) tokenOf(session string) string {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.received) - 1; i >= 0; i-- {
		tok := strings.TrimPrefix(w.received[i], "Bearer ")
		if _, claims, err := zerotrust.Inspect(tok); err == nil && strings.Contains(string(claims), `"sid":"`+session+`"`) {
			return tok
		}
	}
	w.t.Fatalf("no credential for session %s", session)
	return ""
}

func (w *credentialWorld) introspect(token string) map[string]any {
	w.t.Helper()
	resp, err := http.PostForm(w.base+gateway.IntrospectPath, url.Values{"token": {token}})
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		w.t.Fatalf("introspection: %d %v", resp.StatusCode, err)
	}
	return out
}

// waitInactive polls introspection of token until it says inactive.
func (w *credentialWorld) waitInactive(token string) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for w.introspect(token)["active"] != false {
		if time.Now().After(deadline) {
			w.t.Fatal("the credential is still active after its session closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type jwksKeys jose.JSONWebKeySet

func (s jwksKeys) VerificationKey(kid string) (jose.JSONWebKey, bool) {
	for _, k := range s.Keys {
		if k.KeyID == kid {
			return k, true
		}
	}
	return jose.JSONWebKey{}, false
}

// TestSessionCredentials (AASM P8, upstream credentials): each client
// session reaches the upstream with its own credential, naming its principal
// and session; the client's bearer never does; closing the session (DELETE)
// revokes its credential and no other; and the credential cannot pass as a
// zero-trust invocation token.
func TestSessionCredentials(t *testing.T) {
	ctx := testCtx(t)
	w := newCredentialWorld(t, time.Minute)
	alice, bob := w.connect("alice", true), w.connect("bob", true)

	creds := w.credentials()
	if len(creds[alice.ID()]) == 0 || len(creds[bob.ID()]) == 0 {
		t.Fatalf("credentials by session: %v (want some for %s and for %s)", creds, alice.ID(), bob.ID())
	}
	// The go-sdk client's sessionless probe before initialize is a stateless
	// request: it had a credential of its own, revoked once answered.
	for sid := range creds {
		if sid == alice.ID() || sid == bob.ID() {
			continue
		}
		if !strings.HasPrefix(sid, "request-") {
			t.Fatalf("a credential for session %q, which no client has", sid)
		}
		w.waitInactive(w.tokenOf(sid))
	}
	for sid, sub := range map[string]string{alice.ID(): "alice", bob.ID(): "bob"} {
		for _, c := range creds[sid] {
			if c.Subject != sub || c.Audience == "" || !strings.HasPrefix(c.Audience, "http://127.0.0.1") || c.Expiry-c.IssuedAt != 60 {
				t.Errorf("session %s (%s) credential claims %+v", sid, sub, c)
			}
		}
	}
	if creds[alice.ID()][0].ID == creds[bob.ID()][0].ID {
		t.Error("two sessions share a credential")
	}
	// credentials verified every Authorization the upstream received as a
	// warden session credential: the clients' IdP tokens never reached it.

	aliceTok, bobTok := w.tokenOf(alice.ID()), w.tokenOf(bob.ID())
	if in := w.introspect(aliceTok); in["active"] != true || in["sub"] != "alice" || in["sid"] != alice.ID() {
		t.Fatalf("introspection of a live session's credential: %v", in)
	}

	// An upstream that holds a session credential cannot call a tool with it.
	_, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds",
		Arguments: json.RawMessage(`{"account_id":"ACC_123","amount":100,"recipient":"vendor@example.com"}`),
		Meta:      mcp.Meta{gateway.MetaTokenKey: bobTok}})
	if wardenRefusal(t, err) != "zero-trust" || !strings.Contains(err.Error(), `typ "wsc+jwt"`) {
		t.Fatalf("a session credential as an invocation token: %v", err)
	}

	// alice ends her session with DELETE: her credential is revoked, bob's not.
	if err := alice.Close(); err != nil {
		t.Fatal(err)
	}
	w.waitInactive(aliceTok)
	if in := w.introspect(aliceTok); len(in) != 1 {
		t.Errorf("an inactive credential's introspection says more than active: %v", in)
	}
	if in := w.introspect(bobTok); in["active"] != true {
		t.Fatalf("bob's credential after alice's session closed: %v", in)
	}

	// Not session credentials: never active.
	invocation, _, err := zerotrust.Issue(w.ring, zerotrust.IssueRequest{Sub: "bob", Upstream: "demo", Tool: "transfer_funds"})
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"invocation token": invocation, "garbage": "a.b.c",
		"client bearer": w.token("bob"), "tampered": tamperSignature(bobTok)} {
		if in := w.introspect(tok); in["active"] != false {
			t.Errorf("%s: introspection says %v", name, in)
		}
	}
}

// TestSessionCredentialsIdleTimeout: a session that idles out takes its
// credential with it.
func TestSessionCredentialsIdleTimeout(t *testing.T) {
	w := newCredentialWorld(t, 300*time.Millisecond)
	alice := w.connect("alice", false)
	tok := w.tokenOf(alice.ID())
	w.waitInactive(tok)
}

// tamperSignature changes one character in the middle of a compact JWS's
// signature, so that the change always alters signature bits (the last
// characters of a base64url signature carry padding bits, and replacing
// them with "AA" changed nothing when those bits were already zero).
func tamperSignature(token string) string {
	i := len(token) - 10
	c := byte('A')
	if token[i] == c {
		c = 'B'
	}
	return token[:i] + string(c) + token[i+1:]
}
