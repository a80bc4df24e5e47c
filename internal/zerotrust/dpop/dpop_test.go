package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

func TestVerifyAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  crypto.Signer
		alg  string
	}{
		{"ES256", ecKey(t), "ES256"},
		{"EdDSA", edKey(t), "EdDSA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := apiRequest(t)
			proof, err := NewProof(tc.key, req, "jti-1", now.Add(-5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			h.Set("DPoP", proof)
			p, verr := Verify(h, req, testOpts())
			if verr != nil {
				t.Fatalf("Verify: %v", verr)
			}
			wantJKT, err := Thumbprint(&jose.JSONWebKey{Key: tc.key.Public()})
			if err != nil {
				t.Fatal(err)
			}
			if p.JTI != "jti-1" || p.JKT != wantJKT || !p.IAT.Equal(now.Add(-5*time.Second)) {
				t.Errorf("proof = {JTI %q, JKT %q, IAT %v}, want {jti-1, %q, %v}", p.JTI, p.JKT, p.IAT, wantJKT, now.Add(-5*time.Second))
			}
			if !p.BoundTo(wantJKT) {
				t.Error("proof is not bound to its own key")
			}
			hdr, _ := decodeObject(strings.Split(proof, ".")[0])
			if alg, _ := stringMember(hdr, "alg"); alg != tc.alg {
				t.Errorf("alg = %q, want %q", alg, tc.alg)
			}
		})
	}
}

func TestVerifyWithoutToken(t *testing.T) {
	req := Request{Method: "GET", URL: mustURL(t, "https://gw.example.com/.well-known/x")}
	if _, err := VerifyProof(mustProof(t, ecKey(t), req), req, testOpts()); err != nil {
		t.Fatalf("proof without ath for a token-less request: %v", err)
	}
}

func TestVerifyHeaderNameCaseInsensitive(t *testing.T) {
	req := apiRequest(t)
	proof := mustProof(t, ecKey(t), req)
	// A hand-built map with the non-canonical spelling is still seen, so a
	// second proof under another spelling cannot slip past the count.
	if _, err := Verify(http.Header{"DPoP": {proof}}, req, testOpts()); err != nil {
		t.Fatalf("non-canonical key: %v", err)
	}
	_, err := Verify(http.Header{"DPoP": {proof}, "Dpop": {proof}}, req, testOpts())
	if err == nil || err.Rule != RuleHeaderCount {
		t.Fatalf("two spellings: got %v, want rule %s", err, RuleHeaderCount)
	}
}

func TestOptionsAlgs(t *testing.T) {
	req := apiRequest(t)
	proof := mustProof(t, edKey(t), req)
	opts := testOpts()
	opts.Algs = []string{"ES256"}
	if _, err := VerifyProof(proof, req, opts); err == nil || err.Rule != RuleAlg {
		t.Fatalf("EdDSA with Algs [ES256]: got %v, want rule alg", err)
	}
	opts.Algs = []string{"EdDSA"}
	if _, err := VerifyProof(proof, req, opts); err != nil {
		t.Fatalf("EdDSA with Algs [EdDSA]: %v", err)
	}
}

func TestNonceAccepted(t *testing.T) {
	req := apiRequest(t)
	proof, err := newProof(ecKey(t), req, "jti-n", now, "server-nonce-7")
	if err != nil {
		t.Fatal(err)
	}
	opts := testOpts()
	opts.Nonce = "server-nonce-7"
	if _, verr := VerifyProof(proof, req, opts); verr != nil {
		t.Fatalf("proof with the current nonce: %v", verr)
	}
	// A nonce the server did not ask for is harmless.
	if _, verr := VerifyProof(proof, req, testOpts()); verr != nil {
		t.Fatalf("unrequested nonce: %v", verr)
	}
}

// TestStolenToken is D3: a thief with the victim's token but not the
// victim's key signs a proof of their own, with a correct ath. The proof is
// valid; only the cnf.jkt comparison stops it.
func TestStolenToken(t *testing.T) {
	victim, thief := ecKey(t), ecKey(t)
	victimJKT, err := Thumbprint(&jose.JSONWebKey{Key: &victim.PublicKey})
	if err != nil {
		t.Fatal(err)
	}
	token := struct{ CnfJKT string }{CnfJKT: victimJKT} // issued to the victim
	req := apiRequest(t)

	p, verr := VerifyProof(mustProof(t, thief, req), req, testOpts())
	if verr != nil {
		t.Fatalf("thief's proof should be a valid proof: %v", verr)
	}
	if p.JKT == token.CnfJKT || p.BoundTo(token.CnfJKT) {
		t.Fatal("thief's proof is bound to the victim's token")
	}

	p, verr = VerifyProof(mustProof(t, victim, req), req, testOpts())
	if verr != nil {
		t.Fatal(verr)
	}
	if !p.BoundTo(token.CnfJKT) {
		t.Fatal("victim's proof is not bound to the victim's token")
	}
	if p.BoundTo("") {
		t.Fatal("an empty cnf.jkt must bind nothing")
	}
}

func TestRefusals(t *testing.T) {
	key, other := ecKey(t), ecKey(t)
	req := apiRequest(t)
	good := mustProof(t, key, req)
	parts := strings.Split(good, ".")
	otherParts := strings.Split(mustProof(t, other, req), ".")

	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	// spoil returns a proof by key whose header and claims were edited.
	spoil := func(editHeader, editClaims func(h, c map[string]any)) string {
		h, c := validHeader(t, key), validClaims(t)
		if editHeader != nil {
			editHeader(h, c)
		}
		if editClaims != nil {
			editClaims(h, c)
		}
		return handBuilt(t, key, h, c)
	}
	claim := func(name string, v any) string {
		return spoil(nil, func(_, c map[string]any) {
			if v == nil {
				delete(c, name)
			} else {
				c[name] = v
			}
		})
	}
	header := func(name string, v any) string {
		return spoil(func(h, _ map[string]any) {
			if v == nil {
				delete(h, name)
			} else {
				h[name] = v
			}
		}, nil)
	}
	privateJWK := publicJWK(t, &key.PublicKey)
	scalar, err := key.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	privateJWK["d"] = b64(scalar)

	hsInput := b64JSON(t, map[string]any{"typ": "dpop+jwt", "alg": "HS256", "jwk": map[string]any{"kty": "oct", "k": b64([]byte("secret"))}}) +
		"." + b64JSON(t, validClaims(t))
	noneProof := b64JSON(t, map[string]any{"typ": "dpop+jwt", "alg": "none", "jwk": publicJWK(t, &key.PublicKey)}) +
		"." + b64JSON(t, validClaims(t)) + "."

	hsOpts := testOpts()
	hsOpts.Algs = []string{"HS256", "none", "ES256"}
	nonceOpts := testOpts()
	nonceOpts.Nonce = "n-1"
	noToken := req
	noToken.AccessToken = ""
	otherToken := req
	otherToken.AccessToken = "access-token-2"
	otherPath := req
	otherPath.URL = mustURL(t, "https://gw.example.com/admin")
	otherHost := req
	otherHost.URL = mustURL(t, "https://evil.example.com/mcp")
	plainHTTP := req
	plainHTTP.URL = mustURL(t, "http://gw.example.com/mcp")
	getReq := req
	getReq.Method = "GET"

	tests := []struct {
		name    string
		headers http.Header // used when non-nil, else proof
		proof   string
		req     Request
		opts    Options
		rule    string
	}{
		{name: "two DPoP headers", headers: http.Header{"Dpop": {good, good}}, rule: RuleHeaderCount},
		{name: "no DPoP header", headers: http.Header{"Authorization": {"DPoP x"}}, rule: RuleHeaderCount},
		{name: "two parts", proof: parts[0] + "." + parts[1], rule: RuleMalformed},
		{name: "four parts", proof: good + ".x", rule: RuleMalformed},
		{name: "JSON serialization", proof: `{"payload":"` + parts[1] + `"}`, rule: RuleMalformed},
		{name: "padded base64", proof: parts[0] + "==." + parts[1] + "." + parts[2], rule: RuleMalformed},
		{name: "header not JSON", proof: b64([]byte("typ")) + "." + parts[1] + "." + parts[2], rule: RuleMalformed},
		{name: "duplicate alg", proof: b64([]byte(`{"typ":"dpop+jwt","alg":"ES256","alg":"none"}`)) + "." + parts[1] + "." + parts[2], rule: RuleMalformed},
		{name: "crit", proof: header("crit", []string{"exp"}), rule: RuleMalformed},
		{name: "oversized", proof: good + strings.Repeat("A", MaxProofSize), rule: RuleMalformed},
		{name: "claims not JSON", proof: func() string {
			input := b64JSON(t, validHeader(t, key)) + "." + b64([]byte("[1,2]"))
			return input + "." + b64(es256(t, key, input))
		}(), rule: RuleMalformed},
		{name: "typ JWT", proof: header("typ", "JWT"), rule: RuleTyp},
		{name: "typ missing", proof: header("typ", nil), rule: RuleTyp},
		{name: "typ case", proof: header("typ", "DPoP+JWT"), rule: RuleTyp},
		{name: "alg none", proof: noneProof, rule: RuleAlg},
		{name: "alg none even if configured", proof: noneProof, opts: hsOpts, rule: RuleAlg},
		{name: "HS256", proof: hsInput + "." + b64(hs256([]byte("secret"), hsInput)), rule: RuleAlg},
		{name: "HS256 even if configured", proof: hsInput + "." + b64(hs256([]byte("secret"), hsInput)), opts: hsOpts, rule: RuleAlg},
		{name: "ES384 not allowed by default", proof: header("alg", "ES384"), rule: RuleAlg},
		{name: "alg missing", proof: header("alg", nil), rule: RuleAlg},
		{name: "jwk missing", proof: header("jwk", nil), rule: RuleJWK},
		{name: "jwk not object", proof: header("jwk", "key"), rule: RuleJWK},
		{name: "jwk with private d", proof: header("jwk", privateJWK), rule: RuleJWK},
		{name: "jwk P-384 for ES256", proof: header("jwk", publicJWK(t, &p384.PublicKey)), rule: RuleJWK},
		{name: "jwk Ed25519 for ES256", proof: header("jwk", publicJWK(t, edKey(t).Public())), rule: RuleJWK},
		{name: "signed by another key", proof: parts[0] + "." + parts[1] + "." + otherParts[2], rule: RuleSignature},
		{name: "other key's header", proof: otherParts[0] + "." + parts[1] + "." + parts[2], rule: RuleSignature},
		{name: "claims tampered", proof: parts[0] + "." + b64JSON(t, validClaims(t)) + "." + parts[2], rule: RuleSignature},
		{name: "jti missing", proof: claim("jti", nil), rule: RuleJTI},
		{name: "jti empty", proof: claim("jti", ""), rule: RuleJTI},
		{name: "jti number", proof: claim("jti", 7), rule: RuleJTI},
		{name: "jti too long", proof: claim("jti", strings.Repeat("j", MaxJTILength+1)), rule: RuleJTI},
		{name: "htm mismatch", proof: good, req: getReq, rule: RuleHTM},
		{name: "htm lowercase", proof: claim("htm", "post"), rule: RuleHTM},
		{name: "htm missing", proof: claim("htm", nil), rule: RuleHTM},
		{name: "htu other path", proof: good, req: otherPath, rule: RuleHTU},
		{name: "htu other host", proof: good, req: otherHost, rule: RuleHTU},
		{name: "htu other scheme", proof: good, req: plainHTTP, rule: RuleHTU},
		{name: "htu missing", proof: claim("htu", nil), rule: RuleHTU},
		{name: "htu relative", proof: claim("htu", "/mcp"), rule: RuleHTU},
		{name: "htu userinfo", proof: claim("htu", "https://a@gw.example.com/mcp"), rule: RuleHTU},
		{name: "request URL not absolute", proof: good, req: Request{Method: "POST", URL: mustURL(t, "/mcp"), AccessToken: req.AccessToken}, rule: RuleHTU},
		{name: "iat too old", proof: claim("iat", now.Add(-61*time.Second).Unix()), rule: RuleIAT},
		{name: "iat too new", proof: claim("iat", now.Add(61*time.Second).Unix()), rule: RuleIAT},
		{name: "iat string", proof: claim("iat", "1700000000"), rule: RuleIAT},
		{name: "iat missing", proof: claim("iat", nil), rule: RuleIAT},
		{name: "iat huge", proof: claim("iat", 1e300), rule: RuleIAT},
		{name: "nonce missing", proof: good, opts: nonceOpts, rule: RuleNonce},
		{name: "nonce stale", proof: claim("nonce", "n-0"), opts: nonceOpts, rule: RuleNonce},
		{name: "ath mismatch", proof: good, req: otherToken, rule: RuleATH},
		{name: "ath missing with token", proof: claim("ath", nil), rule: RuleATH},
		{name: "ath not a string", proof: claim("ath", 1), rule: RuleATH},
		{name: "ath without token", proof: good, req: noToken, rule: RuleATH},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req
			if r.URL == nil {
				r = req
			}
			opts := tc.opts
			if opts.Now == nil {
				opts = testOpts()
			}
			var (
				p    *Proof
				verr *Error
			)
			if tc.headers != nil {
				p, verr = Verify(tc.headers, r, opts)
			} else {
				p, verr = VerifyProof(tc.proof, r, opts)
			}
			if verr == nil {
				t.Fatalf("accepted (JKT %s), want rule %s", p.JKT, tc.rule)
			}
			if p != nil {
				t.Errorf("refusal returned a proof")
			}
			if verr.Rule != tc.rule {
				t.Fatalf("rule %s (%v), want %s", verr.Rule, verr, tc.rule)
			}
		})
	}
}

func TestIATWindowEdges(t *testing.T) {
	req := apiRequest(t)
	key := ecKey(t)
	opts := testOpts()
	opts.IATWindow = 10 * time.Second
	for _, d := range []time.Duration{-10 * time.Second, 10 * time.Second, 0} {
		proof, err := NewProof(key, req, "j", now.Add(d))
		if err != nil {
			t.Fatal(err)
		}
		if _, verr := VerifyProof(proof, req, opts); verr != nil {
			t.Errorf("iat now%+v inside a 10s window: %v", d, verr)
		}
	}
	for _, d := range []time.Duration{-11 * time.Second, 11 * time.Second} {
		proof, err := NewProof(key, req, "j", now.Add(d))
		if err != nil {
			t.Fatal(err)
		}
		if _, verr := VerifyProof(proof, req, opts); verr == nil || verr.Rule != RuleIAT {
			t.Errorf("iat now%+v outside a 10s window: got %v", d, verr)
		}
	}
}

func TestErrorOAuthError(t *testing.T) {
	if got := (&Error{Rule: RuleNonce}).OAuthError(); got != "use_dpop_nonce" {
		t.Errorf("nonce: %q", got)
	}
	if got := (&Error{Rule: RuleSignature}).OAuthError(); got != "invalid_dpop_proof" {
		t.Errorf("signature: %q", got)
	}
	if got := (&Error{Rule: RuleHTU, Reason: "x"}).Error(); got != "dpop: htu: x" {
		t.Errorf("Error() = %q", got)
	}
}

// opaqueSigner hides the concrete key type, as a hardware key would.
type opaqueSigner struct{ s crypto.Signer }

func (o opaqueSigner) Public() crypto.PublicKey { return o.s.Public() }
func (o opaqueSigner) Sign(r io.Reader, d []byte, opts crypto.SignerOpts) ([]byte, error) {
	return o.s.Sign(r, d, opts)
}

func TestNewProof(t *testing.T) {
	req := apiRequest(t)
	req.URL = mustURL(t, "https://gw.example.com/mcp?session=1#frag")
	for _, key := range []crypto.Signer{opaqueSigner{ecKey(t)}, opaqueSigner{edKey(t)}} {
		proof, err := NewProof(key, req, "j", now)
		if err != nil {
			t.Fatalf("%T: %v", key.Public(), err)
		}
		if _, verr := VerifyProof(proof, req, testOpts()); verr != nil {
			t.Fatalf("%T: %v", key.Public(), verr)
		}
		c, _ := decodeObject(strings.Split(proof, ".")[1])
		if htu, _ := stringMember(c, "htu"); htu != "https://gw.example.com/mcp" {
			t.Errorf("htu = %q, want query and fragment dropped", htu)
		}
	}

	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() (string, error){
		"P-384 key":    func() (string, error) { return NewProof(p384, req, "j", now) },
		"nil key":      func() (string, error) { return NewProof(nil, req, "j", now) },
		"empty jti":    func() (string, error) { return NewProof(ecKey(t), req, "", now) },
		"empty method": func() (string, error) { return NewProof(ecKey(t), Request{URL: req.URL}, "j", now) },
		"relative URL": func() (string, error) {
			return NewProof(ecKey(t), Request{Method: "GET", URL: mustURL(t, "/x")}, "j", now)
		},
	} {
		if _, err := call(); err == nil {
			t.Errorf("%s: NewProof succeeded", name)
		}
	}
}
