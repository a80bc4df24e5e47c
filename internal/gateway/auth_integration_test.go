//go:build integration

package gateway_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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

// bearer is an http.RoundTripper that adds Authorization: Bearer token.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestAuthenticatedSessions (AASM P1): with gateway.auth, a client needs an
// OAuth bearer token for this gateway; the principal it names is whom calls
// act for; a session cannot be taken over with another principal's token;
// and no credential ever reaches the upstream.
func TestAuthenticatedSessions(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	// The identity provider: one P-256 key, published as a JWKS file.
	idpKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &idpKey.PublicKey, KeyID: "idp-1", Algorithm: "ES256", Use: "sig"}}})
	jwksPath := filepath.Join(dir, "jwks.json")
	os.WriteFile(jwksPath, jwks, 0o600)
	const iss, aud = "https://idp.example.com", "https://gw.example.com/mcp"
	token := func(sub, audience string) string {
		s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: idpKey}, (&jose.SignerOptions{}).WithHeader("kid", "idp-1"))
		tok, err := jwt.Signed(s).Claims(map[string]any{"iss": iss, "aud": audience, "sub": sub, "exp": time.Now().Add(time.Hour).Unix()}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	// The upstream records every Authorization header it is sent.
	var mu sync.Mutex
	var upstreamAuth []string
	ledger := demoserver.NewLedger()
	server := demoserver.New(demoserver.Options{Root: t.TempDir(), Ledger: ledger, Env: func() []string { return nil }})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		upstreamAuth = append(upstreamAuth, r.Header.Values("Authorization")...)
		mu.Unlock()
		sdk.ServeHTTP(w, r)
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
	establishSQLite(t, keysDir)
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  auth: {issuer: %q, audience: %q, jwks_file: %q}
  zero_trust: {data_dir: %q}
  upstreams:
    - name: demo
      url: %s
      require_token: [transfer_funds]
`, iss, aud, jwksPath, keysDir, up.URL))
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	endpoint := srv.URL + "/mcp"

	// No credential: 401 with a challenge that points at the metadata.
	resp, err := http.Post(endpoint, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`) {
		t.Fatalf("no credential: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
	resp, err = http.Get(srv.URL + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if meta.Resource != aud || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != iss {
		t.Fatalf("protected resource metadata: %+v", meta)
	}

	connectAs := func(tok string) (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, nil)
		return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{tok}}}, nil)
	}
	if _, err := connectAs(token("alice", "https://other.example.com")); err == nil {
		t.Fatal("a token meant for another resource opened a session")
	}
	alice, err := connectAs(token("alice", aud))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()

	// The zero-trust token must be alice's: her principal, not a setting.
	transfer := func(sub string) error {
		args := `{"account_id":"ACC_123","amount":100,"recipient":"vendor@example.com"}`
		zt, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{Sub: sub, Upstream: "demo", Tool: "transfer_funds", Arguments: []byte(args)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = alice.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds", Arguments: json.RawMessage(args),
			Meta: mcp.Meta{gateway.MetaTokenKey: zt}})
		return err
	}
	if err := transfer("bob"); wardenRefusal(t, err) != "zero-trust" {
		t.Fatalf("bob's token on alice's session: %v", err)
	}
	if err := transfer("alice"); err != nil {
		t.Fatalf("alice's token on alice's session: %v", err)
	}

	// Bob, with a valid token of his own, cannot use alice's session.
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", alice.ID())
	req.Header.Set("Mcp-Protocol-Version", alice.InitializeResult().ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+token("bob", aud))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "session-owner") {
		t.Fatalf("bob on alice's session: %d %s", resp.StatusCode, body)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(upstreamAuth) != 0 {
		t.Fatalf("the upstream was sent credentials (token passthrough): %q", upstreamAuth)
	}
	if b, _ := ledger.Balance("ACC_123"); b != 99900 {
		t.Fatalf("balance %d: want only alice's transfer", b)
	}
}
