package gateway

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/zerotrust"
)

func TestZeroTrustClientSignature(t *testing.T) {
	f := newZT(t, nil)
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	f.stage.Signatures = mustList(t, []string{"transfer_funds"}, nil)
	f.stage.ClientKeys = func(sub string) []jose.JSONWebKey {
		if sub == "alice" {
			return []jose.JSONWebKey{{Key: pub}}
		}
		return nil
	}
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage)})
	hash, _, _ := zerotrust.ParamsHash([]byte(transferArgs))
	issue := func() (string, string) {
		tok, claims, err := zerotrust.Issue(f.ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "up", Tool: "transfer_funds", Arguments: []byte(transferArgs)})
		if err != nil {
			t.Fatal(err)
		}
		return tok, claims.ID
	}
	sign := func(key ed25519.PrivateKey, jti string) string {
		sig, err := zerotrust.SignInvocation(key, zerotrust.Invocation{JTI: jti, Tool: "transfer_funds", ParametersHash: hash})
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	withSig := func(id, tok, sig string) string {
		return strings.Replace(call(id, "transfer_funds", transferArgs, tok), `"progressToken":"p1",`,
			`"progressToken":"p1","`+MetaSignatureKey+`":"`+sig+`",`, 1)
	}

	tok, jti := issue()
	_, otherJTI := issue()
	for name, msg := range map[string]string{
		"no signature":              call("1", "transfer_funds", transferArgs, tok),
		"signed by an unpinned key": withSig("1", tok, sign(otherPriv, jti)),
		"signed for another token":  withSig("1", tok, sign(priv, otherJTI)),
	} {
		h.send(h.client, msg)
		if _, d := detailOf(t, h.recv(h.client)); d.Rule != "INV-6" {
			t.Errorf("%s: %+v, want INV-6", name, d)
		}
	}
	h.nothing(h.upstream, "unsigned calls")

	h.send(h.client, withSig("2", tok, sign(priv, jti)))
	got := h.recv(h.upstream)
	if strings.Contains(string(got.Raw), "io.agentwarden/") {
		t.Errorf("warden's _meta members reached the upstream: %s", got.Raw)
	}
	if !strings.Contains(string(got.Raw), `"_meta":{"progressToken":"p1"}`) {
		t.Errorf("the client's own _meta was not kept: %s", got.Raw)
	}
}
