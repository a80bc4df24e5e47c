package zerotrust

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

const exampleArgs = `{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`

// newRing returns a ring in a fresh directory with one key of alg.
func newRing(t *testing.T, alg string) *KeyRing {
	t.Helper()
	r, err := LoadKeyRing(filepath.Join(t.TempDir(), "keys"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rotate(alg); err != nil {
		t.Fatal(err)
	}
	return r
}

func issue(t *testing.T, r *KeyRing, req IssueRequest) (string, Claims) {
	t.Helper()
	if req.Sub == "" {
		req.Sub = "alice"
	}
	if req.Tool == "" {
		req.Tool = "payments/transfer_funds"
	}
	if req.Upstream == "" {
		req.Upstream = "bank"
	}
	if req.Arguments == nil {
		req.Arguments = []byte(exampleArgs)
	}
	tok, c, err := Issue(r, req)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	return tok, c
}

func expect() Expect {
	return Expect{Sub: "alice", Upstream: "bank", Tool: "payments/transfer_funds", Arguments: []byte(exampleArgs)}
}

// decodeSegment decodes one base64url part of a compact JWS into a map.
func decodeSegment(t *testing.T, seg string) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func b64(v any) string {
	data, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(data)
}

func activeKid(t *testing.T, r *KeyRing) string {
	t.Helper()
	for _, k := range r.Keys() {
		if k.Active {
			return k.Kid
		}
	}
	t.Fatal("ring has no active key")
	return ""
}

func TestIssueVerifyRoundTrip(t *testing.T) {
	for _, alg := range []string{AlgEdDSA, AlgES256} {
		t.Run(alg, func(t *testing.T) {
			r := newRing(t, alg)
			tok, issued := issue(t, r, IssueRequest{Persona: "personaAgenticProvider", Classification: 2,
				DPoPJKT: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"})
			parts := strings.Split(tok, ".")
			h := decodeSegment(t, parts[0])
			if h["alg"] != alg || h["typ"] != TokenType || h["kid"] != activeKid(t, r) {
				t.Errorf("header = %v, want alg %s, typ %s, kid %s", h, alg, TokenType, activeKid(t, r))
			}
			c, verr := Verify(r, tok, Expect{Sub: "alice", Upstream: "bank", Tool: "payments/transfer_funds",
				Arguments: []byte(exampleArgs), Persona: "personaAgenticProvider"})
			if verr != nil {
				t.Fatalf("Verify: %v", verr)
			}
			if c.ParametersHash != "bb4b09fe11ca1829bcb98fda2a658faf5f93c2da07c3b16b40e2d8646c518c9c" {
				t.Errorf("parameters_hash = %s, want the standard example's JCS hash", c.ParametersHash)
			}
			if c.Expiry-c.IssuedAt != 30 || c.NotBefore != c.IssuedAt {
				t.Errorf("iat %d nbf %d exp %d: want nbf = iat and a 30 s lifetime", c.IssuedAt, c.NotBefore, c.Expiry)
			}
			if len(c.ID) != 22 || c.ID == c.Transaction.ID {
				t.Errorf("jti %q is not 128 random bits, or equals txn.id", c.ID)
			}
			if c.HashAlg != "SHA256" || c.BindingMode != BindingAdHoc || c.Issuer != DefaultIssuer || c.Audience != DefaultAudience {
				t.Errorf("claims %+v", c)
			}
			if c.Confirmation == nil || c.Confirmation.JKT != "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" || c.Classification != 2 {
				t.Errorf("cnf/classification lost: %+v", c)
			}
			if !reflect.DeepEqual(*c, issued) {
				t.Errorf("verified claims %+v differ from issued %+v", *c, issued)
			}
			if _, err := time.Parse(time.RFC3339, c.Transaction.Timestamp); err != nil {
				t.Errorf("txn.timestamp %q: %v", c.Transaction.Timestamp, err)
			}
		})
	}
}

func TestVerifyNamesTheViolatedInvariant(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	tok, c := issue(t, r, IssueRequest{Persona: "personaAgenticProvider"})
	iat := time.Unix(c.IssuedAt, 0)
	for _, tc := range []struct {
		name      string
		edit      func(*Expect)
		inv, step string
	}{
		{"valid", func(*Expect) {}, "", ""},
		{"keys reordered, whitespace, 1000.00", func(e *Expect) {
			e.Arguments = []byte(`{ "recipient":"vendor@example.com", "amount":1000.00, "account_id":"ACC_123" }`)
		}, "", ""},
		{"wrong sub", func(e *Expect) { e.Sub = "mallory" }, "INV-1", "2"},
		{"no authenticated sub", func(e *Expect) { e.Sub = "" }, "INV-1", "2"},
		{"wrong tool", func(e *Expect) { e.Tool = "payments/delete_account" }, "INV-1", "3"},
		{"the same tool on another upstream", func(e *Expect) { e.Upstream = "other-bank" }, "INV-1", "3"},
		{"no upstream to compare with", func(e *Expect) { e.Upstream = "" }, "INV-1", "3"},
		{"an unbound token on any session", func(e *Expect) { e.Session = "s1" }, "", ""},
		{"wrong persona", func(e *Expect) { e.Persona = "personaGovernance" }, "claims", "3a"},
		{"one byte changed in params", func(e *Expect) {
			e.Arguments = []byte(strings.Replace(exampleArgs, "1000", "1001", 1))
		}, "INV-3", "5"},
		{"argument added", func(e *Expect) {
			e.Arguments = []byte(strings.Replace(exampleArgs, "}", `,"memo":"x"}`, 1))
		}, "INV-3", "5"},
		{"absent arguments", func(e *Expect) { e.Arguments = nil }, "INV-3", "5"},
		{"expired", func(e *Expect) { e.Now = iat.Add(30 * time.Second) }, "INV-2", "4"},
		{"expired beyond skew", func(e *Expect) { e.Now = iat.Add(36 * time.Second); e.Skew = 5 * time.Second }, "INV-2", "4"},
		{"within skew", func(e *Expect) { e.Now = iat.Add(33 * time.Second); e.Skew = 5 * time.Second }, "", ""},
		{"not yet valid", func(e *Expect) { e.Now = iat.Add(-10 * time.Second) }, "INV-2", "4"},
		{"wrong audience", func(e *Expect) { e.Aud = "other-gateway" }, "claims", "1"},
		{"wrong issuer", func(e *Expect) { e.Iss = "someone-else" }, "claims", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := expect()
			want.Now = iat.Add(time.Second)
			tc.edit(&want)
			got, verr := Verify(r, tok, want)
			if tc.inv == "" {
				if verr != nil || got == nil {
					t.Fatalf("Verify refused a valid call: %v", verr)
				}
				return
			}
			if verr == nil {
				t.Fatalf("Verify accepted it, want %s", tc.inv)
			}
			if got != nil {
				t.Error("Verify returned claims with an error")
			}
			if verr.Invariant != tc.inv || verr.Step != tc.step {
				t.Errorf("got %s step %s (%v), want %s step %s", verr.Invariant, verr.Step, verr, tc.inv, tc.step)
			}
			if verr.JTI != c.ID {
				t.Errorf("VerifyError.JTI = %q, want %q", verr.JTI, c.ID)
			}
		})
	}
}

func TestVerifyErrorLine(t *testing.T) {
	e := &VerifyError{Invariant: "INV-3", Step: "5", Reason: "parameters_hash does not match the arguments"}
	if got, want := e.Error(), "INV-3 parameter integrity: parameters_hash does not match the arguments (step 5)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestIssueCapsTTLAt30s(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	req := IssueRequest{Sub: "alice", Upstream: "u", Tool: "t", TTL: 31 * time.Second}
	if _, _, err := Issue(r, req); err == nil || !strings.Contains(err.Error(), "30s") {
		t.Fatalf("Issue with TTL 31s: err = %v, want a refusal naming the 30s cap", err)
	}
	req.UnsafeMaxTTL = time.Minute
	tok, c, err := Issue(r, req)
	if err != nil {
		t.Fatalf("Issue with UnsafeMaxTTL: %v", err)
	}
	if c.Expiry-c.IssuedAt != 31 {
		t.Errorf("lifetime %d s, want 31", c.Expiry-c.IssuedAt)
	}
	want := Expect{Sub: "alice", Upstream: "u", Tool: "t", Now: time.Unix(c.IssuedAt, 0)}
	if _, verr := Verify(r, tok, want); verr == nil || verr.Invariant != "INV-2" {
		t.Errorf("a 31 s token verified without the verifier's consent: %v", verr)
	}
	want.UnsafeMaxTTL = time.Minute
	if _, verr := Verify(r, tok, want); verr != nil {
		t.Errorf("with Expect.UnsafeMaxTTL: %v", verr)
	}
	for _, bad := range []IssueRequest{
		{Upstream: "u", Tool: "t"}, {Sub: "alice", Upstream: "u"},
		{Sub: "alice", Tool: "t"}, // no upstream
		{Sub: "alice", Upstream: "u", Tool: "t", BindingMode: "whatever"},
		{Sub: "alice", Upstream: "u", Tool: "t", Classification: 6},
		{Sub: "alice", Upstream: "u", Tool: "t", DPoPJKT: "not-a-thumbprint"},
		{Sub: "alice", Upstream: "u", Tool: "t", Arguments: []byte(`{"a":1,"a":2}`)},
		{Sub: "alice", Upstream: "u", Tool: "t", TTL: time.Millisecond},
	} {
		if _, _, err := Issue(r, bad); err == nil {
			t.Errorf("Issue(%+v) succeeded", bad)
		}
	}
}

// signRaw signs payload with the ring's active key and the given header
// options, bypassing Issue's checks.
func signRaw(t *testing.T, r *KeyRing, typ string, payload []byte) string {
	t.Helper()
	key, err := r.Signer()
	if err != nil {
		t.Fatal(err)
	}
	opts := &jose.SignerOptions{}
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	s, err := jose.NewSigner(key, opts)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestVerifyRefusesForgedTokens(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	kid := activeKid(t, r)
	tok, c := issue(t, r, IssueRequest{})
	parts := strings.Split(tok, ".")
	now := time.Unix(c.IssuedAt, 0)

	pub, _ := r.VerificationKey(kid)
	var jwks struct{ Keys []struct{ X string } }
	json.Unmarshal(r.PublicJWKS(), &jwks)
	rawPub, _ := base64.RawURLEncoding.DecodeString(jwks.Keys[0].X)
	pubJSON, _ := json.Marshal(pub)
	hs256 := func(secret []byte) string {
		input := b64(map[string]string{"alg": "HS256", "typ": TokenType, "kid": kid}) + "." + parts[1]
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(input))
		return input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}

	tampered := c
	tampered.Tool = "payments/delete_account"
	tamperedPayload, _ := json.Marshal(tampered)

	longLived := c
	longLived.Expiry = c.IssuedAt + 3600
	longPayload, _ := json.Marshal(longLived)

	unknown := newRing(t, AlgEdDSA)
	otherTok, _ := issue(t, unknown, IssueRequest{})

	withExtra := map[string]any{}
	json.Unmarshal([]byte(mustJSON(c)), &withExtra)
	withExtra["delegation_chain"] = []string{"bob"}

	for _, tc := range []struct {
		name, token, inv string
	}{
		{"alg none", b64(map[string]string{"alg": "none", "typ": TokenType, "kid": kid}) + "." + parts[1] + ".", "signature"},
		{"HS256 keyed with the raw public key", hs256(rawPub), "signature"},
		{"HS256 keyed with the public JWK", hs256(pubJSON), "signature"},
		{"unknown kid", otherTok, "signature"},
		{"tampered payload", parts[0] + "." + base64.RawURLEncoding.EncodeToString(tamperedPayload) + "." + parts[2], "signature"},
		{"truncated", parts[0] + "." + parts[1], "signature"},
		{"garbage", "not a token", "signature"},
		{"typ JWT", signRaw(t, r, "JWT", []byte(mustJSON(c))), "signature"},
		{"no typ", signRaw(t, r, "", []byte(mustJSON(c))), "signature"},
		{"lifetime of an hour", signRaw(t, r, TokenType, longPayload), "INV-2"},
		{"unknown claim", signRaw(t, r, TokenType, []byte(mustJSON(withExtra))), "claims"},
		{"duplicate claim", signRaw(t, r, TokenType, []byte(strings.Replace(mustJSON(c), `{"iss"`, `{"sub":"alice","iss"`, 1))), "claims"},
		{"missing jti", signRaw(t, r, TokenType, []byte(strings.Replace(mustJSON(c), `"jti":"`+c.ID+`",`, "", 1))), "claims"},
		// encoding/json alone would let the later "sub" win and accept it.
		{"case variant of a claim", signRaw(t, r, TokenType, []byte(strings.Replace(mustJSON(c), `{"iss"`, `{"SUB":"mallory","iss"`, 1))), "claims"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := expect()
			want.Now = now
			if tc.name == "tampered payload" {
				want.Tool = "payments/delete_account"
			}
			got, verr := Verify(r, tc.token, want)
			if verr == nil || got != nil {
				t.Fatalf("forged token accepted: %+v", got)
			}
			t.Log(verr)
			if verr.Invariant != tc.inv || verr.Step != "1" && tc.inv != "INV-2" {
				t.Errorf("got %v, want %s", verr, tc.inv)
			}
		})
	}
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

func TestVerifyRefusesKeyOfAnotherAlgorithm(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	tok, c := issue(t, r, IssueRequest{})
	parts := strings.Split(tok, ".")
	h := decodeSegment(t, parts[0])
	h["alg"] = AlgES256
	forged := b64(h) + "." + parts[1] + "." + parts[2]
	want := expect()
	want.Now = time.Unix(c.IssuedAt, 0)
	if _, verr := Verify(r, forged, want); verr == nil || verr.Invariant != "signature" || !strings.Contains(verr.Reason, "EdDSA key") {
		t.Errorf("ES256 header on an EdDSA kid: %v", verr)
	}
}

func TestInspectIsUnverified(t *testing.T) {
	r := newRing(t, AlgES256)
	tok, c := issue(t, r, IssueRequest{})
	h, claims, err := Inspect(tok)
	if err != nil {
		t.Fatal(err)
	}
	var hv map[string]any
	var cv Claims
	json.Unmarshal(h, &hv)
	json.Unmarshal(claims, &cv)
	if hv["typ"] != TokenType || !reflect.DeepEqual(cv, c) {
		t.Errorf("Inspect = %s %s", h, claims)
	}
	// Inspect shows even a token nobody signed.
	if _, _, err := Inspect(b64(map[string]string{"alg": "none"}) + "." + b64(c) + "."); err != nil {
		t.Errorf("Inspect of an unsigned token: %v", err)
	}
	for _, bad := range []string{"", "a.b", "!!.e30.x", b64("x")[:2] + ".e30.x"} {
		if _, _, err := Inspect(bad); err == nil {
			t.Errorf("Inspect(%q) succeeded", bad)
		}
	}
}

// TestVerifyWithPrecomputedHash: a caller that hashed the arguments already
// passes the hash; Verify trusts it instead of the arguments, so a hash of
// other arguments must fail INV-3.
func TestVerifyWithPrecomputedHash(t *testing.T) {
	r := newRing(t, "EdDSA")
	tok, _ := issue(t, r, IssueRequest{})
	good, _, _ := ParamsHash([]byte(exampleArgs))
	e := expect()
	e.ParametersHash = good
	if _, verr := Verify(r, tok, e); verr != nil {
		t.Fatalf("precomputed matching hash refused: %v", verr)
	}
	other, _, _ := ParamsHash([]byte(`{"amount":1}`))
	e.ParametersHash = other
	if _, verr := Verify(r, tok, e); verr == nil || verr.Invariant != "INV-3" {
		t.Fatalf("precomputed hash of other arguments: %v, want INV-3", verr)
	}
}

// Binding mode C: the token binds the server's schema (its hash) and the
// client's values; a changed tool definition voids it.
func TestHybridToken(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	schema := []byte(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`)
	// Key order does not matter to the schema hash, as to parameters_hash.
	reordered := []byte(`{"required":["amount"],"properties":{"amount":{"type":"number"}},"type":"object"}`)
	sh, err := SchemaHash(schema)
	if err != nil {
		t.Fatal(err)
	}
	if sh2, _ := SchemaHash(reordered); sh2 != sh {
		t.Fatal("the schema hash depends on key order")
	}
	tok, c := issue(t, r, IssueRequest{BindingMode: BindingHybrid, SchemaHash: sh})
	if c.SchemaHash != sh || c.BindingMode != "hybrid" {
		t.Fatalf("claims %+v", c)
	}
	now := time.Unix(c.IssuedAt, 0)
	want := expect()
	want.Now, want.SchemaHash = now, sh
	if _, err := Verify(r, tok, want); err != nil {
		t.Fatalf("the unchanged tool: %v", err)
	}
	changed, _ := SchemaHash([]byte(`{"type":"object","properties":{"amount":{"type":"number"},"to":{"type":"string"}}}`))
	for name, schemaHash := range map[string]string{"changed tool": changed, "unknown tool": ""} {
		want.SchemaHash = schemaHash
		_, err := Verify(r, tok, want)
		var v *VerifyError
		if !errors.As(err, &v) || v.Invariant != "INV-3" || v.Step != "5" {
			t.Errorf("%s: %v, want INV-3 at step 5", name, err)
		}
	}
	// Other modes ignore the schema: a changed tool does not void them.
	tok, c = issue(t, r, IssueRequest{})
	want.Now, want.SchemaHash = time.Unix(c.IssuedAt, 0), changed // the second may have turned since the first token
	if _, err := Verify(r, tok, want); err != nil {
		t.Errorf("an ad-hoc token and a changed schema: %v", err)
	}
	for name, req := range map[string]IssueRequest{
		"hybrid without a schema hash": {Sub: "a", Upstream: "u", Tool: "t", BindingMode: BindingHybrid},
		"ad-hoc with a schema hash":    {Sub: "a", Upstream: "u", Tool: "t", SchemaHash: sh},
		"a schema hash that is not":    {Sub: "a", Upstream: "u", Tool: "t", BindingMode: BindingHybrid, SchemaHash: "abc"},
	} {
		if _, _, err := Issue(r, req); err == nil {
			t.Errorf("%s: issued", name)
		}
	}
	// A token signed elsewhere that claims hybrid without schema_hash.
	payload := decodeSegment(t, strings.Split(tok, ".")[1])
	payload["binding_mode"] = "hybrid"
	forged := signRaw(t, r, TokenType, []byte(mustJSON(payload)))
	if _, err := Verify(r, forged, want); err == nil || !strings.Contains(err.Error(), "schema_hash") {
		t.Errorf("hybrid without schema_hash: %v", err)
	}
}

// A caller that already hashed the arguments (the gateway, once per call)
// passes the hash, and Issue signs it without hashing again: here the
// arguments are not even JSON, so hashing them would fail. A hash that is
// not a lowercase hex SHA-256 is refused.
func TestIssueTakesTheCallersHash(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	const h = "bb4b09fe11ca1829bcb98fda2a658faf5f93c2da07c3b16b40e2d8646c518c9c"
	req := IssueRequest{Sub: "alice", Upstream: "bank", Tool: "payments/transfer_funds", Arguments: []byte("{"), ParametersHash: h}
	_, c, err := Issue(r, req)
	if err != nil {
		t.Fatalf("Issue with the caller's hash: %v", err)
	}
	if c.ParametersHash != h {
		t.Fatalf("parameters_hash = %s, want the caller's %s", c.ParametersHash, h)
	}
	for _, bad := range []string{"BB4B09FE11CA1829BCB98FDA2A658FAF5F93C2DA07C3B16B40E2D8646C518C9C", "bb4b", h + "00"} {
		req.ParametersHash = bad
		if _, _, err := Issue(r, req); err == nil || !strings.Contains(err.Error(), "parameters hash") {
			t.Errorf("hash %q: %v, want a refusal naming the parameters hash", bad, err)
		}
	}
}
