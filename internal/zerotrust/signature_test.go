package zerotrust

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

func clientKey(t *testing.T, ec bool) (crypto.Signer, jose.JSONWebKey) {
	t.Helper()
	if ec {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k, jose.JSONWebKey{Key: &k.PublicKey}
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv, jose.JSONWebKey{Key: pub}
}

func TestClientSignature(t *testing.T) {
	inv := Invocation{JTI: "j1", Tool: "transfer_funds", ParametersHash: "bb4b09fe11ca1829bcb98fda2a658faf5f93c2da07c3b16b40e2d8646c518c9c"}
	for _, ec := range []bool{false, true} {
		key, pub := clientKey(t, ec)
		sig, err := SignInvocation(key, inv)
		if err != nil {
			t.Fatal(err)
		}
		if verr := VerifyInvocation(sig, []jose.JSONWebKey{pub}, inv); verr != nil {
			t.Fatalf("ec=%v: valid signature refused: %v", ec, verr)
		}
		_, otherPub := clientKey(t, ec)
		for name, tc := range map[string]struct {
			sig    string
			pinned []jose.JSONWebKey
			want   Invocation
		}{
			"no signature":        {"", []jose.JSONWebKey{pub}, inv},
			"nothing pinned":      {sig, nil, inv},
			"key not pinned":      {sig, []jose.JSONWebKey{otherPub}, inv},
			"another jti":         {sig, []jose.JSONWebKey{pub}, Invocation{JTI: "j2", Tool: inv.Tool, ParametersHash: inv.ParametersHash}},
			"another tool":        {sig, []jose.JSONWebKey{pub}, Invocation{JTI: inv.JTI, Tool: "refund", ParametersHash: inv.ParametersHash}},
			"another hash":        {sig, []jose.JSONWebKey{pub}, Invocation{JTI: inv.JTI, Tool: inv.Tool, ParametersHash: strings.Repeat("0", 64)}},
			"garbage":             {"x.y.z", []jose.JSONWebKey{pub}, inv},
			"signed without type": {untypedSignature(t, key, inv), []jose.JSONWebKey{pub}, inv},
		} {
			if verr := VerifyInvocation(tc.sig, tc.pinned, tc.want); verr == nil || verr.Invariant != "INV-6" {
				t.Errorf("ec=%v, %s: %v, want INV-6", ec, name, verr)
			}
		}
	}
}

func untypedSignature(t *testing.T, key crypto.Signer, inv Invocation) string {
	t.Helper()
	alg := jose.EdDSA
	if _, ok := key.(*ecdsa.PrivateKey); ok {
		alg = jose.ES256
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(inv)
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := jws.CompactSerialize()
	return out
}

func TestLoadPublicJWKRefusesPrivateKeys(t *testing.T) {
	key, pub := clientKey(t, false)
	dir := t.TempDir()
	pubData, _ := pub.MarshalJSON()
	privData, _ := (&jose.JSONWebKey{Key: key}).MarshalJSON()
	os.WriteFile(filepath.Join(dir, "pub.jwk"), pubData, 0o644)
	os.WriteFile(filepath.Join(dir, "priv.jwk"), privData, 0o600)
	if _, err := LoadPublicJWK(filepath.Join(dir, "pub.jwk")); err != nil {
		t.Fatalf("public key refused: %v", err)
	}
	if _, err := LoadPublicJWK(filepath.Join(dir, "priv.jwk")); err == nil || !strings.Contains(err.Error(), "private key") {
		t.Fatalf("private key file: %v, want a refusal", err)
	}
}
