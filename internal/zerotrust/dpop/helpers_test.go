package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// now is the fixed clock of every test.
var now = time.Unix(1_700_000_000, 0)

func testOpts() Options { return Options{Now: func() time.Time { return now }} }

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// apiRequest is a token-bearing call to the gateway's MCP endpoint.
func apiRequest(t testing.TB) Request {
	return Request{Method: "POST", URL: mustURL(t, "https://gw.example.com/mcp"), AccessToken: "access-token-1"}
}

func ecKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func edKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustProof(t testing.TB, key crypto.Signer, req Request) string {
	t.Helper()
	p, err := NewProof(key, req, "jti-"+rand.Text(), now)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func publicJWK(t testing.TB, pub crypto.PublicKey) map[string]any {
	t.Helper()
	data, err := json.Marshal(jose.JSONWebKey{Key: pub})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// validHeader and validClaims are a correct proof for apiRequest, to be
// spoilt one member at a time and signed by handBuilt.
func validHeader(t testing.TB, key *ecdsa.PrivateKey) map[string]any {
	return map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": publicJWK(t, &key.PublicKey)}
}

func validClaims(t testing.TB) map[string]any {
	req := apiRequest(t)
	return map[string]any{
		"jti": "hand-built-1",
		"htm": req.Method,
		"htu": req.URL.String(),
		"iat": now.Unix(),
		"ath": ATH(req.AccessToken),
	}
}

func b64(data []byte) string { return base64.RawURLEncoding.EncodeToString(data) }

func b64JSON(t testing.TB, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b64(data)
}

// handBuilt signs header and claims with key as ES256 (raw r||s), whatever
// the header says, so that each refusal test has exactly one defect.
func handBuilt(t testing.TB, key *ecdsa.PrivateKey, header, claims map[string]any) string {
	t.Helper()
	input := b64JSON(t, header) + "." + b64JSON(t, claims)
	return input + "." + b64(es256(t, key, input))
}

func es256(t testing.TB, key *ecdsa.PrivateKey, input string) []byte {
	t.Helper()
	sum := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return sig
}

func hs256(secret []byte, input string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(input))
	return m.Sum(nil)
}
