package demo

// The demo's higher tiers: classification rules make big transfers Tier 2
// (a DPoP-bound token) and very big ones Tier 3 (also the client's own
// signature of the invocation). The demo client plays alice, who holds a
// DPoP key and a signing key pinned at the gateway, and a thief who has
// stolen one of her tokens.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/policy"
	"github.com/agentwarden/warden/internal/zerotrust"
	"github.com/agentwarden/warden/internal/zerotrust/dpop"
)

// tierRules are the demo's classification rules.
var tierRules = []policy.Rule{
	{Name: "big-transfer", Level: 2, When: `tool.name == "transfer_funds" && args.amount > 10000`},
	{Name: "huge-transfer", Level: 1, When: `tool.name == "transfer_funds" && args.amount > 50000`},
}

// keys are the demo client's keys.
type keys struct {
	dpop  *ecdsa.PrivateKey  // alice's DPoP key
	thief *ecdsa.PrivateKey  // the thief's own DPoP key
	sign  ed25519.PrivateKey // alice's invocation-signing key, pinned at the gateway
	jkt   string             // thumbprint of alice's DPoP key
}

func newKeys() (*keys, error) {
	k := &keys{}
	var err error
	if k.dpop, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	if k.thief, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	if _, k.sign, err = ed25519.GenerateKey(rand.Reader); err != nil {
		return nil, err
	}
	k.jkt, err = dpop.Thumbprint(&jose.JSONWebKey{Key: &k.dpop.PublicKey})
	return k, err
}

// pinned is alice's public signing key as the gateway pins it.
func (k *keys) pinned() []jose.JSONWebKey {
	return []jose.JSONWebKey{{Key: k.sign.Public(), Algorithm: string(jose.EdDSA)}}
}

// proofTransport is the demo client's HTTP transport: it adds a DPoP proof
// for the token a POST carries, signed by whichever key the scene chose for
// that token (alice's, the thief's, or none).
type proofTransport struct {
	scene *scene
	url   *url.URL
}

var tokenInBody = regexp.MustCompile(`"io\.agentwarden/token":"([^"]+)"`)

func (t proofTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil {
		return http.DefaultTransport.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	if m := tokenInBody.FindSubmatch(body); m != nil {
		token := string(m[1])
		t.scene.mu.Lock()
		key := t.scene.proofKey[token]
		t.scene.mu.Unlock()
		if key != nil {
			proof, err := dpop.NewProof(key, dpop.Request{Method: http.MethodPost, URL: t.url, AccessToken: token}, rand.Text(), time.Now())
			if err != nil {
				return nil, err
			}
			req.Header.Set(dpop.HeaderName, proof)
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// tiers plays the Tier 2 and Tier 3 steps.
func (s *scene) tiers(ctx context.Context, cs *mcp.ClientSession) error {
	big := transferArgs(20000)
	issue := func(amount int, jkt string) (string, error) {
		tok, _, err := zerotrust.Issue(s.ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "demo", Tool: "transfer_funds",
			Arguments: []byte(transferJSON(amount)), DPoPJKT: jkt})
		return tok, err
	}
	plain, err := issue(20000, "")
	if err != nil {
		return err
	}
	s.callWith(ctx, cs, "transfer_funds of 20000 (Tier 2 by rule big-transfer) with a token but no DPoP key", "transfer_funds", big, plain, "refused")
	bound, err := issue(20000, s.keys.jkt)
	if err != nil {
		return err
	}
	s.useProof(bound, s.keys.thief)
	s.callWith(ctx, cs, "alice's DPoP-bound token, stolen, with the thief's own proof", "transfer_funds", big, bound, "refused")
	bound, err = issue(20000, s.keys.jkt)
	if err != nil {
		return err
	}
	s.useProof(bound, s.keys.dpop)
	s.callWith(ctx, cs, "alice's DPoP-bound token with her proof (RFC 9449)", "transfer_funds", big, bound, "relayed")

	huge := transferArgs(75000)
	bound, err = issue(75000, s.keys.jkt)
	if err != nil {
		return err
	}
	s.useProof(bound, s.keys.dpop)
	s.callWith(ctx, cs, "transfer_funds of 75000 (Tier 3 by rule huge-transfer): token and proof, no client signature",
		"transfer_funds", huge, bound, "refused")
	bound, claims, err := zerotrust.Issue(s.ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "demo", Tool: "transfer_funds",
		Arguments: []byte(transferJSON(75000)), DPoPJKT: s.keys.jkt})
	if err != nil {
		return err
	}
	sig, err := zerotrust.SignInvocation(s.keys.sign, zerotrust.Invocation{JTI: claims.ID, Tool: "transfer_funds",
		ParametersHash: claims.ParametersHash})
	if err != nil {
		return err
	}
	s.useProof(bound, s.keys.dpop)
	s.callWithMeta(ctx, cs, "the same with alice's signature of the invocation by her pinned key", "transfer_funds", huge,
		mcp.Meta{gateway.MetaTokenKey: bound, gateway.MetaSignatureKey: sig}, "relayed")
	return nil
}

// useProof makes the client prove possession of key when it sends token.
func (s *scene) useProof(token string, key *ecdsa.PrivateKey) {
	s.mu.Lock()
	s.proofKey[token] = key
	s.mu.Unlock()
}

func transferJSON(amount int) string {
	return fmt.Sprintf(`{"account_id":"ACC_123","amount":%d,"recipient":"vendor@example.com"}`, amount)
}

func transferArgs(amount int) map[string]any {
	return map[string]any{"account_id": "ACC_123", "amount": amount, "recipient": "vendor@example.com"}
}
