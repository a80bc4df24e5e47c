package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/revoke"
	"github.com/agentwarden/warden/internal/zerotrust"
)

func credentialRing(t *testing.T) *zerotrust.KeyRing {
	t.Helper()
	ring, err := zerotrust.LoadKeyRing(filepath.Join(t.TempDir(), "keys"))
	if err == nil {
		_, err = ring.Rotate(zerotrust.AlgEdDSA)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

// TestSessionCredentialRenewal: one credential per session, kept until half
// its TTL has passed, then replaced; Authorization carries it as a bearer,
// another header bare.
func TestSessionCredentialRenewal(t *testing.T) {
	ring := credentialRing(t)
	now := time.Now()
	s := &SessionCredentials{Ring: ring, Issuer: "https://gw", Audience: "https://up/mcp", Header: "Authorization",
		TTL: 10 * time.Minute, Subject: "svc", now: func() time.Time { return now }}
	_, scope := newSessionScope(context.Background(), "s-1")
	cred := s.forSession(scope, "alice")
	if scope.credential.Load() {
		t.Fatal("a credential was recorded before any was issued")
	}
	name, first, err := cred()
	if err != nil || name != "Authorization" || !strings.HasPrefix(first, "Bearer ") {
		t.Fatalf("cred() = %q %q %v", name, first, err)
	}
	if !scope.credential.Load() {
		t.Error("the scope does not know a credential was issued")
	}
	c, err := zerotrust.VerifySession(ring, strings.TrimPrefix(first, "Bearer "), "https://gw", now, 0)
	if err != nil || c.Subject != "alice" || c.Session != "s-1" || c.Audience != "https://up/mcp" {
		t.Fatalf("credential %+v, %v", c, err)
	}
	now = now.Add(4 * time.Minute)
	if _, v, _ := cred(); v != first {
		t.Error("renewed before half its TTL passed")
	}
	now = now.Add(2 * time.Minute)
	if _, v, _ := cred(); v == first {
		t.Error("not renewed after half its TTL passed")
	}

	// No authenticated principal: the configured subject; a stateless
	// request: an id of its own.
	s.Header = "X-Session-Credential"
	_, stateless := newSessionScope(context.Background(), "")
	_, v, err := s.forSession(stateless, "")()
	if err != nil || strings.HasPrefix(v, "Bearer ") {
		t.Fatalf("bare credential %q, %v", v, err)
	}
	c, err = zerotrust.VerifySession(ring, v, "", now, 0)
	if err != nil || c.Subject != "svc" || !strings.HasPrefix(c.Session, "request-") {
		t.Fatalf("stateless credential %+v, %v", c, err)
	}
	s.Subject = ""
	if _, _, err := s.forSession(stateless, "")(); err == nil {
		t.Error("a credential without a principal was issued")
	}
}

type undecidedRegistry struct{ revoke.Registry }

func (undecidedRegistry) Check(context.Context, revoke.Token) (bool, string, error) {
	return true, "down", errors.New("down")
}

func TestIntrospection(t *testing.T) {
	ring := credentialRing(t)
	reg := revoke.NewMemory()
	defer reg.Close()
	issue := func(session string) string {
		tok, _, err := zerotrust.IssueSession(ring, zerotrust.SessionRequest{Iss: "https://gw", Aud: "https://up/mcp",
			Sub: "alice", Session: session, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	live, closed := issue("live"), issue("closed")
	if err := endSession(context.Background(), nil, reg, "closed"); err != nil {
		t.Fatal(err)
	}
	invocation, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "up", Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	h := introspectionHandler(ring, "https://gw", reg)
	ask := func(form url.Values) (int, string) {
		r := httptest.NewRequest(http.MethodPost, IntrospectPath, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, strings.TrimSpace(w.Body.String())
	}
	if code, body := ask(url.Values{"token": {live}}); code != 200 || !strings.Contains(body, `"active":true`) ||
		!strings.Contains(body, `"sub":"alice"`) || !strings.Contains(body, `"sid":"live"`) || !strings.Contains(body, `"aud":"https://up/mcp"`) {
		t.Errorf("live: %d %s", code, body)
	}
	for name, tok := range map[string]string{"revoked session": closed, "invocation token": invocation, "garbage": "x.y.z"} {
		if code, body := ask(url.Values{"token": {tok}}); code != 200 || body != `{"active":false}` {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	if code, _ := ask(url.Values{}); code != http.StatusBadRequest {
		t.Errorf("no token: %d", code)
	}
	if in := introspect(context.Background(), ring, "https://gw", undecidedRegistry{}, live); in.Active {
		t.Error("a registry that cannot decide left the credential active")
	}
	if in := introspect(context.Background(), ring, "https://other", reg, live); in.Active {
		t.Error("a credential of another issuer is active")
	}
}
