package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/url"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/zerotrust"
	"github.com/agentwarden/warden/internal/zerotrust/dpop"
)

// dpopClient is a client key pair, as a DPoP client holds one.
type dpopClient struct {
	key *ecdsa.PrivateKey
	jkt string
}

func newDPoPClient(t *testing.T) dpopClient {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jkt, err := dpop.Thumbprint(&jose.JSONWebKey{Key: &key.PublicKey})
	if err != nil {
		t.Fatal(err)
	}
	return dpopClient{key: key, jkt: jkt}
}

func (d dpopClient) proof(t *testing.T, rawURL, token string) string {
	t.Helper()
	u, _ := url.Parse(rawURL)
	p, err := dpop.NewProof(d.key, dpop.Request{Method: "POST", URL: u, AccessToken: token}, rand.Text(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const gatewayURL = "http://127.0.0.1:8787/mcp"

func newDPoPFixture(t *testing.T) (*ztFixture, *harness) {
	f := newZT(t, nil)
	f.stage.URLs = func(*Call) []*url.URL {
		a, _ := url.Parse(gatewayURL)
		b, _ := url.Parse(gatewayURL + "/up")
		return []*url.URL{a, b}
	}
	return f, newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage)})
}

func (f *ztFixture) boundToken(t *testing.T, jkt string) string {
	t.Helper()
	return f.boundTokenFor(t, transferArgs, jkt)
}

// boundTokenFor is a token for transfer_funds with args, bound to jkt.
func (f *ztFixture) boundTokenFor(t *testing.T, args, jkt string) string {
	t.Helper()
	tok, _, err := zerotrust.Issue(f.ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "up", Tool: "transfer_funds",
		Arguments: []byte(args), DPoPJKT: jkt})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// sendWithProof sends a call carrying token, with proof in its DPoP header
// (as the HTTP listener passes it on).
func (h *harness) sendWithProof(id, token, proof string) {
	h.t.Helper()
	h.sendWithProofArgs(id, transferArgs, token, proof)
}

// sendWithProofArgs is sendWithProof for a transfer with args.
func (h *harness) sendWithProofArgs(id, args, token, proof string) {
	h.t.Helper()
	msg, err := jsonrpc.Decode([]byte(call(id, "transfer_funds", args, token)), jsonrpc.Limits{})
	if err != nil {
		h.t.Fatal(err)
	}
	if proof != "" {
		msg.Header = map[string][]string{"Dpop": {proof}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.client.Write(ctx, msg); err != nil {
		h.t.Fatal(err)
	}
}

func TestZeroTrustDPoPBoundToken(t *testing.T) {
	f, h := newDPoPFixture(t)
	alice := newDPoPClient(t)
	tok := f.boundToken(t, alice.jkt)
	proof := alice.proof(t, gatewayURL, tok)

	h.sendWithProof("1", tok, proof)
	if got := h.recv(h.upstream); got.ID.Raw() != "1" {
		t.Fatalf("upstream got %s", got.Raw)
	}
	h.send(h.upstream, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	h.recv(h.client)

	// The same token and proof again: the proof is spent.
	h.sendWithProof("2", tok, proof)
	if _, d := detailOf(t, h.recv(h.client)); d.Rule != "INV-5" {
		t.Fatalf("replayed proof: %+v, want INV-5", d)
	}
	h.nothing(h.upstream, "a replayed proof")
}

func TestZeroTrustDPoPRefusals(t *testing.T) {
	f, h := newDPoPFixture(t)
	alice, mallory := newDPoPClient(t), newDPoPClient(t)
	stolen := f.boundToken(t, alice.jkt)
	other := f.boundToken(t, alice.jkt)
	for _, tc := range []struct{ name, token, proof string }{
		// The thief has the token but not alice's key: a proof by their own
		// key, even with the right ath, is not the token's key.
		{"stolen token, thief's proof", stolen, mallory.proof(t, gatewayURL, stolen)},
		{"no proof for a bound token", stolen, ""},
		{"proof for another token (ath)", stolen, alice.proof(t, gatewayURL, other)},
		{"proof for another URL (htu)", stolen, alice.proof(t, "http://127.0.0.1:8787/other", stolen)},
	} {
		h.sendWithProof("1", tc.token, tc.proof)
		if _, d := detailOf(t, h.recv(h.client)); d.Stage != "zero-trust" || d.Rule != "INV-5" {
			t.Errorf("%s: %+v, want zero-trust INV-5", tc.name, d)
		}
	}
	h.nothing(h.upstream, "refused DPoP calls")

	// None of that burned the token: alice can still use it, once.
	h.sendWithProof("2", stolen, alice.proof(t, gatewayURL+"/up", stolen))
	if got := h.recv(h.upstream); got.ID.Raw() != "2" {
		t.Fatalf("upstream got %s", got.Raw)
	}
}

func TestZeroTrustRequireDPoPRefusesUnboundTokens(t *testing.T) {
	f := newZT(t, nil)
	f.stage.RequireDPoP = true
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage)})
	h.send(h.client, call("1", "transfer_funds", transferArgs, f.token(t, "alice", "transfer_funds", transferArgs)))
	if _, d := detailOf(t, h.recv(h.client)); d.Rule != "INV-5" {
		t.Fatalf("%+v, want INV-5", d)
	}
}
