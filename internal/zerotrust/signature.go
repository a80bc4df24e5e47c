package zerotrust

// Client signatures (Tier 3, INV-6). The client holds a key that warden has
// pinned for its subject, and signs the one invocation it is about to make:
// the token's jti, the tool and the parameters_hash. The gateway accepts the
// call only with a valid signature by a pinned key, so not even the party
// that issued the token can have it used for a call the client did not sign.
//
//	signature = compact JWS, typ "wzt-sig+jwt", alg EdDSA or ES256,
//	            payload {"jti": …, "parameters_hash": …, "tool": …}

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"os"

	jose "github.com/go-jose/go-jose/v4"
)

// SignatureType is the typ header of client invocation signatures.
const SignatureType = "wzt-sig+jwt"

// Invocation is what a client signature covers.
type Invocation struct {
	JTI            string `json:"jti"`
	Tool           string `json:"tool"`
	ParametersHash string `json:"parameters_hash"`
}

// SignInvocation signs inv with the client's key (Ed25519 or ECDSA P-256).
func SignInvocation(key crypto.Signer, inv Invocation) (string, error) {
	var alg jose.SignatureAlgorithm
	switch k := key.Public().(type) {
	case ed25519.PublicKey:
		alg = jose.EdDSA
	case *ecdsa.PublicKey:
		if k.Curve.Params().Name != "P-256" {
			return "", fmt.Errorf("ECDSA keys must be P-256, not %s", k.Curve.Params().Name)
		}
		alg = jose.ES256
	default:
		return "", fmt.Errorf("unsupported client key type %T (want Ed25519 or P-256)", k)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key},
		(&jose.SignerOptions{}).WithType(SignatureType))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(inv)
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// VerifyInvocation checks that sig is a signature of want by one of the
// pinned public keys of the token's subject. It fails with INV-6.
func VerifyInvocation(sig string, pinned []jose.JSONWebKey, want Invocation) *VerifyError {
	const inv, step = "INV-6", "8"
	if sig == "" {
		return fail(inv, step, "the tool requires a client signature (Tier 3), and the call has none")
	}
	if len(pinned) == 0 {
		return fail(inv, step, "no client key is pinned for this subject")
	}
	if len(sig) > maxTokenBytes {
		return fail(inv, step, "signature of %d bytes is larger than %d", len(sig), maxTokenBytes)
	}
	jws, err := jose.ParseSignedCompact(sig, []jose.SignatureAlgorithm{jose.EdDSA, jose.ES256})
	if err != nil {
		return fail(inv, step, "malformed client signature: %v", err)
	}
	if len(jws.Signatures) != 1 || jws.Signatures[0].Header.ExtraHeaders[jose.HeaderType] != SignatureType {
		return fail(inv, step, "the client signature is not of type %q", SignatureType)
	}
	var payload []byte
	for _, k := range pinned {
		if p, err := jws.Verify(k); err == nil {
			payload = p
			break
		}
	}
	if payload == nil {
		return fail(inv, step, "the client signature does not verify with any key pinned for this subject")
	}
	var got Invocation
	if err := strictJSON(payload, &got, true); err != nil {
		return fail(inv, step, "malformed client signature payload: %v", err)
	}
	if !equal(got.JTI, want.JTI) || !equal(got.Tool, want.Tool) || !equal(got.ParametersHash, want.ParametersHash) {
		return fail(inv, step, "the client signed another invocation (jti, tool or parameters_hash differ)")
	}
	return nil
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// LoadPublicJWK reads a client's public key to pin. A file holding a private
// key is refused: pins are public.
func LoadPublicJWK(path string) (jose.JSONWebKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return jose.JSONWebKey{}, err
	}
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON(data); err != nil {
		return jose.JSONWebKey{}, fmt.Errorf("%s: not a JWK: %v", path, err)
	}
	if !k.IsPublic() {
		return jose.JSONWebKey{}, fmt.Errorf("%s: holds a private key; pin the public key only", path)
	}
	if !k.Valid() {
		return jose.JSONWebKey{}, fmt.Errorf("%s: invalid key", path)
	}
	return k, nil
}
