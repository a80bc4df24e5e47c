//go:build integration

package gateway_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/zerotrust"
	"github.com/agentwarden/warden/internal/zerotrust/dpop"
)

// TestZeroTrustAttackTable sends each attack on an invocation token through
// the real gateway (HTTP listener, classification, audit log) to the demo
// server, as a raw tools/call of transfer_funds that would move money if it
// ran. Each must be refused by the zero-trust stage with the rule, step and
// invariant of the check that failed, carry its audit record's id, and leave
// the demo server's ledger untouched.
//
// Small transfers are Tier 1 (level 4); transfers over 50000 are Tier 3
// (level 1: DPoP and alice's signature by her pinned key). Every token names
// the configured persona unless the attack is about the persona.
func TestZeroTrustAttackTable(t *testing.T) {
	const (
		persona = "personaAgenticProvider"
		small   = `{"account_id":"ACC_123","amount":2500,"recipient":"vendor@example.com"}`
		huge    = `{"account_id":"ACC_123","amount":50001,"recipient":"vendor@example.com"}`
	)
	dataDir := keyedDataDir(t)
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	// alice's invocation-signing key, pinned at the gateway for Tier 3.
	_, signKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pin, err := (&jose.JSONWebKey{Key: signKey.Public(), Algorithm: string(jose.EdDSA)}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	pinFile := filepath.Join(t.TempDir(), "alice.pub.jwk")
	if err := os.WriteFile(pinFile, pin, 0o600); err != nil {
		t.Fatal(err)
	}

	up, ledger := demoUpstream(t, false)
	// public_url must name the listener, so the server exists before the
	// gateway that handles its requests.
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer srv.Close()
	establishSQLite(t, dataDir)
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust:
    data_dir: %q
    subject: alice
    persona: %s
    public_url: %q
    client_keys: {alice: %q}
    classification:
      - {name: transfer, level: 4, when: 'tool.name == "transfer_funds"'}
      - {name: huge-transfer, level: 1, when: 'tool.name == "transfer_funds" && args.amount > 50000'}
  audit: {}
  upstreams:
    - name: demo
      url: %s
`, dataDir, persona, srv.URL, pinFile, up))
	defer g.Close()
	handler = g.Handler()
	endpoint := srv.URL + "/mcp"

	post := func(body string, hdr map[string]string) (string, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.Header.Get("Mcp-Session-Id"), readReply(t, resp)
	}
	session, _ := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	if session == "" {
		t.Fatal("initialize gave no session")
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"Mcp-Session-Id": session})

	// call sends transfer_funds with args, token in params._meta, and the
	// optional DPoP proof and client signature.
	id := 0
	call := func(args, token, proof, sig string) []byte {
		t.Helper()
		id++
		meta := map[string]string{gateway.MetaTokenKey: token}
		if sig != "" {
			meta[gateway.MetaSignatureKey] = sig
		}
		m, _ := json.Marshal(meta)
		hdr := map[string]string{"Mcp-Session-Id": session}
		if proof != "" {
			hdr["DPoP"] = proof
		}
		_, reply := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"transfer_funds","arguments":%s,"_meta":%s}}`,
			id, args, m), hdr)
		return reply
	}

	issue := func(req zerotrust.IssueRequest) (string, zerotrust.Claims) {
		t.Helper()
		if req.Sub == "" {
			req.Sub = "alice"
		}
		if req.Tool == "" {
			req.Tool = "transfer_funds"
		}
		if req.Upstream == "" {
			req.Upstream = "demo"
		}
		if req.Arguments == nil {
			req.Arguments = []byte(small)
		}
		if req.Persona == "" {
			req.Persona = persona
		}
		tok, claims, err := zerotrust.Issue(ring, req)
		if err != nil {
			t.Fatal(err)
		}
		return tok, claims
	}
	token := func(req zerotrust.IssueRequest) string { tok, _ := issue(req); return tok }

	aliceKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	aliceJKT, err := dpop.Thumbprint(&jose.JSONWebKey{Key: &aliceKey.PublicKey})
	if err != nil {
		t.Fatal(err)
	}
	proof := func(accessToken string) string {
		t.Helper()
		u, _ := url.Parse(endpoint)
		p, err := dpop.NewProof(aliceKey, dpop.Request{Method: http.MethodPost, URL: u, AccessToken: accessToken}, rand.Text(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// What an attacker has: the public key as the gateway publishes it.
	resp, err := http.Get(srv.URL + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	var jwks struct{ Keys []json.RawMessage }
	err = json.NewDecoder(resp.Body).Decode(&jwks)
	resp.Body.Close()
	if err != nil || len(jwks.Keys) != 1 {
		t.Fatalf("JWKS: %v %d keys", err, len(jwks.Keys))
	}
	publicJWK := []byte(jwks.Keys[0])

	otherDir := keyedDataDir(t)
	otherRing, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(otherDir))
	if err != nil {
		t.Fatal(err)
	}

	// The same request with a good token goes through: the attacks below
	// fail for what they change, not for the setup.
	if reply := call(small, token(zerotrust.IssueRequest{}), "", ""); !strings.Contains(string(reply), "txn-") {
		t.Fatalf("a valid Tier 1 call: %s", reply)
	}

	now := time.Now().Unix()
	for _, tc := range []struct {
		name string
		// request builds the attack; any setup it does (a legitimate call)
		// happens before the ledger is read.
		request                      func(t *testing.T) (args, token, proof, sig string)
		rule, step, invariant, cause string
	}{
		{
			name: "expired",
			request: func(t *testing.T) (string, string, string, string) {
				return small, resigned(t, ring, token(zerotrust.IssueRequest{}), func(c *zerotrust.Claims) {
					c.IssuedAt, c.NotBefore, c.Expiry = now-120, now-120, now-90
				}), "", ""
			},
			rule: "INV-2", step: "4", invariant: "INV-2", cause: "token expired at",
		},
		{
			name: "not yet valid",
			request: func(t *testing.T) (string, string, string, string) {
				return small, resigned(t, ring, token(zerotrust.IssueRequest{}), func(c *zerotrust.Claims) {
					c.IssuedAt, c.NotBefore, c.Expiry = now, now+20, now+30
				}), "", ""
			},
			rule: "INV-2", step: "4", invariant: "INV-2", cause: "token is not valid before",
		},
		{
			name: "wrong subject",
			request: func(t *testing.T) (string, string, string, string) {
				return small, token(zerotrust.IssueRequest{Sub: "mallory"}), "", ""
			},
			rule: "INV-1", step: "2", invariant: "INV-1", cause: `sub "mallory" is not the authenticated user "alice"`,
		},
		{
			name: "wrong tool",
			request: func(t *testing.T) (string, string, string, string) {
				return small, token(zerotrust.IssueRequest{Tool: "echo"}), "", ""
			},
			rule: "INV-1", step: "3", invariant: "INV-1", cause: `tool "echo" is not the requested tool "transfer_funds"`,
		},
		{
			// Step 3a is the standard's persona scope check; it belongs to
			// no invariant, so the error names none.
			name: "wrong persona",
			request: func(t *testing.T) (string, string, string, string) {
				return small, token(zerotrust.IssueRequest{Persona: "personaEndUser"}), "", ""
			},
			rule: "claims", step: "3a", cause: `persona "personaEndUser" is not the authorized role "personaAgenticProvider"`,
		},
		{
			// Signature failures are step 1, before any invariant.
			name: "alg none",
			request: func(t *testing.T) (string, string, string, string) {
				return small, withAlg(t, token(zerotrust.IssueRequest{}), "none", nil), "", ""
			},
			rule: "signature", step: "1", cause: `alg "none" is not allowed`,
		},
		{
			name: "HS256 keyed with the public key",
			request: func(t *testing.T) (string, string, string, string) {
				return small, withAlg(t, token(zerotrust.IssueRequest{}), "HS256", publicJWK), "", ""
			},
			rule: "signature", step: "1", cause: `alg "HS256" is not allowed`,
		},
		{
			name: "unknown kid",
			request: func(t *testing.T) (string, string, string, string) {
				tok, _, err := zerotrust.Issue(otherRing, zerotrust.IssueRequest{Sub: "alice", Upstream: "demo", Tool: "transfer_funds",
					Arguments: []byte(small), Persona: persona})
				if err != nil {
					t.Fatal(err)
				}
				return small, tok, "", ""
			},
			rule: "signature", step: "1", cause: "unknown or expired kid",
		},
		{
			// alice's own key, but the proof's ath is the hash of another
			// of her tokens.
			name: "DPoP ath mismatch",
			request: func(t *testing.T) (string, string, string, string) {
				tok := token(zerotrust.IssueRequest{DPoPJKT: aliceJKT})
				return small, tok, proof(token(zerotrust.IssueRequest{DPoPJKT: aliceJKT})), ""
			},
			rule: "INV-5", step: "7", invariant: "INV-5", cause: "dpop: ath:",
		},
		{
			// The exact request again, after it ran once: the proof is
			// checked, and found used, before the token.
			name: "replayed DPoP proof",
			request: func(t *testing.T) (string, string, string, string) {
				tok := token(zerotrust.IssueRequest{DPoPJKT: aliceJKT})
				p := proof(tok)
				if reply := call(small, tok, p, ""); !strings.Contains(string(reply), "txn-") {
					t.Fatalf("the first use of the proof: %s", reply)
				}
				return small, tok, p, ""
			},
			rule: "INV-5", step: "7", invariant: "INV-5", cause: "this DPoP proof was already used",
		},
		{
			// A valid DPoP-bound token and proof; only the signature is missing.
			name: "Tier 3 without a client signature",
			request: func(t *testing.T) (string, string, string, string) {
				tok := token(zerotrust.IssueRequest{Arguments: []byte(huge), DPoPJKT: aliceJKT, Classification: 1})
				return huge, tok, proof(tok), ""
			},
			rule: "INV-6", step: "8", invariant: "INV-6", cause: "the tool requires a client signature (Tier 3), and the call has none",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, tok, p, sig := tc.request(t)
			balance, _ := ledger.Balance("ACC_123")
			transfers := len(ledger.Transfers())

			reply := call(args, tok, p, sig)
			if b, _ := ledger.Balance("ACC_123"); b != balance || len(ledger.Transfers()) != transfers {
				t.Errorf("transfer_funds ran: balance %d -> %d, transfers %d -> %d", balance, b, transfers, len(ledger.Transfers()))
			}
			var msg struct {
				Error *struct {
					Code    int64
					Message string
					Data    struct {
						Stage, Rule, Step, Invariant string
						AuditID                      string `json:"audit_id"`
					}
				}
			}
			if err := json.Unmarshal(reply, &msg); err != nil || msg.Error == nil {
				t.Fatalf("want a JSON-RPC error, got %s (%v)", reply, err)
			}
			e := msg.Error
			if e.Code != jsonrpc.CodeDenied || e.Data.Stage != "zero-trust" || e.Data.Rule != tc.rule ||
				e.Data.Step != tc.step || e.Data.Invariant != tc.invariant {
				t.Errorf("got code %d, data %+v; want %d, stage zero-trust, rule %q, step %q, invariant %q",
					e.Code, e.Data, jsonrpc.CodeDenied, tc.rule, tc.step, tc.invariant)
			}
			if !strings.Contains(e.Message, tc.cause) {
				t.Errorf("message %q does not give the cause %q", e.Message, tc.cause)
			}
			if e.Data.AuditID == "" {
				t.Error("the refusal carries no audit_id, with the audit log on")
			}
		})
	}

	// With alice's signature the same Tier 3 call runs: the refusal above
	// was for the missing signature alone.
	tok, claims := issue(zerotrust.IssueRequest{Arguments: []byte(huge), DPoPJKT: aliceJKT, Classification: 1})
	sig, err := zerotrust.SignInvocation(signKey, zerotrust.Invocation{JTI: claims.ID, Tool: "transfer_funds", ParametersHash: claims.ParametersHash})
	if err != nil {
		t.Fatal(err)
	}
	if reply := call(huge, tok, proof(tok), sig); !strings.Contains(string(reply), "txn-") {
		t.Fatalf("a signed Tier 3 call: %s", reply)
	}
	// Three transfers ran: the first valid call, the replay case's first
	// use, and the signed Tier 3 call.
	if b, _ := ledger.Balance("ACC_123"); b != 100000-2500-2500-50001 {
		t.Fatalf("balance %d, want only the three legitimate transfers made", b)
	}
}

// resigned returns token with its claims changed by edit and signed again
// by the ring's active key: what warden's issuer would sign if it were given
// those times.
func resigned(t *testing.T, ring *zerotrust.KeyRing, token string, edit func(*zerotrust.Claims)) string {
	t.Helper()
	_, raw, err := zerotrust.Inspect(token)
	if err != nil {
		t.Fatal(err)
	}
	var c zerotrust.Claims
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	edit(&c)
	payload, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ring.Signer()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(key, (&jose.SignerOptions{}).WithType(zerotrust.TokenType))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withAlg returns token's header (kid, typ) and claims under another alg:
// "none" with an empty signature, or an HMAC alg keyed with key.
func withAlg(t *testing.T, token, alg string, key []byte) string {
	t.Helper()
	head, claims, err := zerotrust.Inspect(token)
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(head, &h); err != nil {
		t.Fatal(err)
	}
	h["alg"] = alg
	head, err = json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	signing := b64(head) + "." + b64(claims)
	if alg == "none" {
		return signing + "."
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signing))
	return signing + "." + b64(mac.Sum(nil))
}
