package zerotrust

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"math/big"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/zerotrust/dpop"
)

func benchRing(b *testing.B) *KeyRing {
	r, err := LoadKeyRing(filepath.Join(b.TempDir(), "keys"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Rotate(AlgEdDSA); err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkVerify measures the whole Tier 1 check of one token (no
// consume) against the bare Ed25519 verification of the same signature:
// the issue's target is a ratio of at most 1.3.
func BenchmarkVerify(b *testing.B) {
	r := benchRing(b)
	tok, _, err := Issue(r, IssueRequest{Sub: "alice", Upstream: "bank", Tool: "payments/transfer_funds", Arguments: []byte(exampleArgs)})
	if err != nil {
		b.Fatal(err)
	}
	want := expect()
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, verr := Verify(r, tok, want); verr != nil {
				b.Fatal(verr)
			}
		}
	})
	// The same arguments in another key order: hashing them takes the
	// full JCS transform rather than the check for canonical input.
	reordered := want
	reordered.Arguments = []byte(`{"recipient":"vendor@example.com","amount":1000,"account_id":"ACC_123"}`)
	b.Run("full-reordered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, verr := Verify(r, tok, reordered); verr != nil {
				b.Fatal(verr)
			}
		}
	})
	b.Run("signature", func(b *testing.B) {
		signer, _ := r.Signer()
		pub := signer.Key.(jose.JSONWebKey).Key.(ed25519.PrivateKey).Public().(ed25519.PublicKey)
		i := strings.LastIndexByte(tok, '.')
		sig, _ := base64.RawURLEncoding.DecodeString(tok[i+1:])
		for b.Loop() {
			if !ed25519.Verify(pub, []byte(tok[:i]), sig) {
				b.Fatal("signature")
			}
		}
	})
}

// BenchmarkVerifyTier2 measures the Tier 2 checks of one call (the token,
// then its DPoP proof and the cnf.jkt binding; no consume) against the two
// signature checks they contain: Ed25519 on the token, ES256 on the proof.
func BenchmarkVerifyTier2(b *testing.B) {
	r := benchRing(b)
	client, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jkt, _ := Thumbprint(&jose.JSONWebKey{Key: client.Public()})
	tok, _, err := Issue(r, IssueRequest{Sub: "alice", Upstream: "bank", Tool: "payments/transfer_funds", Arguments: []byte(exampleArgs), DPoPJKT: jkt})
	if err != nil {
		b.Fatal(err)
	}
	u, _ := url.Parse("http://127.0.0.1:8787/mcp")
	req := dpop.Request{Method: "POST", URL: u, AccessToken: tok}
	proof, err := dpop.NewProof(client, req, "proof-1", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	hdr := http.Header{"Dpop": {proof}}
	want := expect()
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, verr := Verify(r, tok, want)
			if verr != nil {
				b.Fatal(verr)
			}
			p, perr := dpop.Verify(hdr, req, dpop.Options{})
			if perr != nil || !p.BoundTo(c.Confirmation.JKT) {
				b.Fatal(perr)
			}
		}
	})
	b.Run("proof", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, perr := dpop.Verify(hdr, req, dpop.Options{}); perr != nil {
				b.Fatal(perr)
			}
		}
	})
	b.Run("signatures", func(b *testing.B) {
		signer, _ := r.Signer()
		pub := signer.Key.(jose.JSONWebKey).Key.(ed25519.PrivateKey).Public().(ed25519.PublicKey)
		i := strings.LastIndexByte(tok, '.')
		sig, _ := base64.RawURLEncoding.DecodeString(tok[i+1:])
		j := strings.LastIndexByte(proof, '.')
		psig, _ := base64.RawURLEncoding.DecodeString(proof[j+1:])
		pr, ps := new(big.Int).SetBytes(psig[:32]), new(big.Int).SetBytes(psig[32:])
		for b.Loop() {
			digest := sha256.Sum256([]byte(proof[:j]))
			if !ed25519.Verify(pub, []byte(tok[:i]), sig) || !ecdsa.Verify(&client.PublicKey, digest[:], pr, ps) {
				b.Fatal("signature")
			}
		}
	})
}
