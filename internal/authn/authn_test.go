package authn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

const (
	issuer   = "https://idp.example.com"
	audience = "https://gw.example.com/mcp"
)

type idp struct {
	key *ecdsa.PrivateKey
	kid string
}

func newIDP(t *testing.T, kid string) idp {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return idp{key: k, kid: kid}
}

func (p idp) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: &p.key.PublicKey, KeyID: p.kid, Algorithm: string(jose.ES256), Use: "sig"}
}

// token signs claims (iss, aud, sub, exp filled unless overridden).
func (p idp) token(t *testing.T, edit func(c map[string]any)) string {
	t.Helper()
	c := map[string]any{"iss": issuer, "aud": audience, "sub": "alice", "exp": time.Now().Add(time.Hour).Unix(), "scope": "tools:read tools:call"}
	if edit != nil {
		edit(c)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: p.key}, (&jose.SignerOptions{}).WithHeader("kid", p.kid).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func request(auth ...string) *http.Request {
	r := httptest.NewRequest("POST", "/mcp", nil)
	for _, a := range auth {
		r.Header.Add("Authorization", a)
	}
	return r
}

func TestBearerTokens(t *testing.T) {
	good := newIDP(t, "k1")
	other := newIDP(t, "k1") // same kid, another key: a forgery
	a, err := New(Config{Issuer: issuer, Audience: audience, Keys: StaticKeys{Set: jose.JSONWebKeySet{Keys: []jose.JSONWebKey{good.jwk()}}},
		ResourceMetadata: "https://gw.example.com/.well-known/oauth-protected-resource"})
	if err != nil {
		t.Fatal(err)
	}
	p, f := a.Authenticate(request("Bearer " + good.token(t, nil)))
	if f != nil || p.Subject != "alice" || p.Method != "bearer" || !p.HasScope("tools:call") {
		t.Fatalf("a good token: %+v %v", p, f)
	}
	for name, tc := range map[string]struct {
		auth []string
		rule string
	}{
		"no header":        {nil, "missing"},
		"two headers":      {[]string{"Bearer a", "Bearer b"}, "invalid-request"},
		"basic":            {[]string{"Basic YTpi"}, "scheme"},
		"another audience": {[]string{"Bearer " + good.token(t, func(c map[string]any) { c["aud"] = "https://other.example.com" })}, "audience"},
		"another issuer":   {[]string{"Bearer " + good.token(t, func(c map[string]any) { c["iss"] = "https://evil.example.com" })}, "issuer"},
		"expired":          {[]string{"Bearer " + good.token(t, func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })}, "claims"},
		"no exp":           {[]string{"Bearer " + good.token(t, func(c map[string]any) { delete(c, "exp") })}, "claims"},
		"no sub":           {[]string{"Bearer " + good.token(t, func(c map[string]any) { delete(c, "sub") })}, "claims"},
		"forged":           {[]string{"Bearer " + other.token(t, nil)}, "signature"},
		"unknown kid":      {[]string{"Bearer " + newIDP(t, "k9").token(t, nil)}, "unknown-key"},
		"alg none":         {[]string{"Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9."}, "invalid-token"},
		"HS256":            {[]string{"Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln"}, "invalid-token"},
	} {
		_, f := a.Authenticate(request(tc.auth...))
		if f == nil || f.Rule != tc.rule {
			t.Errorf("%s: %+v, want rule %s", name, f, tc.rule)
			continue
		}
		if !strings.HasPrefix(f.Challenge, `Bearer resource_metadata="https://gw.example.com/.well-known/oauth-protected-resource"`) {
			t.Errorf("%s: challenge %q", name, f.Challenge)
		}
	}
}

func TestAPIKeys(t *testing.T) {
	a, err := New(Config{APIKeys: map[string]string{"ci-bot": HashKey("wk_s3cret")}})
	if err != nil {
		t.Fatal(err)
	}
	if p, f := a.Authenticate(request("Bearer wk_s3cret")); f != nil || p.Subject != "ci-bot" || p.Method != "api-key" {
		t.Fatalf("the key: %+v %v", p, f)
	}
	if _, f := a.Authenticate(request("Bearer wk_s3creT")); f == nil || f.Status != http.StatusUnauthorized {
		t.Fatalf("a wrong key: %+v", f)
	}
	if _, err := New(Config{APIKeys: map[string]string{"x": "not-a-hash"}}); err == nil {
		t.Error("a key that is not a SHA-256 hash was accepted")
	}
	if _, err := New(Config{Issuer: issuer}); err == nil {
		t.Error("an issuer without an audience was accepted")
	}
}

// The issuer rotates its key: an unknown kid refetches the JWKS, at most
// once per interval.
func TestRemoteKeysRotate(t *testing.T) {
	first, second := newIDP(t, "k1"), newIDP(t, "k2")
	var served atomic.Value
	served.Store(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{first.jwk()}})
	var fetches atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		json.NewEncoder(w).Encode(served.Load())
	}))
	defer srv.Close()
	keys := NewRemoteKeys(srv.URL, time.Hour)
	keys.minRefresh = 0
	a, _ := New(Config{Issuer: issuer, Audience: audience, Keys: keys})
	if _, f := a.Authenticate(request("Bearer " + first.token(t, nil))); f != nil {
		t.Fatal(f)
	}
	served.Store(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{second.jwk()}})
	if _, f := a.Authenticate(request("Bearer " + second.token(t, nil))); f != nil {
		t.Fatalf("after rotation: %v", f)
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2 (initial, and one for the new kid)", n)
	}
	keys.minRefresh = time.Hour
	for range 5 {
		a.Authenticate(request("Bearer " + newIDP(t, "k7").token(t, nil)))
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("unknown kids made %d fetches; want them rate-limited", n-2)
	}
}
