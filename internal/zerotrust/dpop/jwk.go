package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// privateMembers are the JWK members that carry private or symmetric key
// material (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2). A proof that
// embeds any of them has leaked its key and is refused, even though the
// public part alone would verify.
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k", "priv"}

// minRSABits is the smallest RSA modulus accepted for RS*/PS* proofs.
const minRSABits = 2048

// publicKey parses the header jwk and checks it can verify alg.
func publicKey(raw json.RawMessage, alg string) (*jose.JSONWebKey, *Error) {
	if raw == nil || string(raw) == "null" {
		return nil, refuse(RuleJWK, "header jwk is missing")
	}
	// raw is a member of a validated header: read its names directly.
	var private string
	if !jsonrpc.Members(raw, func(name string, _ []byte) {
		if private == "" && slices.Contains(privateMembers, name) {
			private = name
		}
	}) {
		return nil, refuse(RuleJWK, "header jwk is not a JSON object")
	}
	if private != "" {
		return nil, refuse(RuleJWK, "header jwk carries private member %q", private)
	}
	var key jose.JSONWebKey
	if err := key.UnmarshalJSON(raw); err != nil {
		return nil, refuse(RuleJWK, "header jwk: %v", err)
	}
	if !key.Valid() || !key.IsPublic() {
		return nil, refuse(RuleJWK, "header jwk is not a public key")
	}
	if !keyFitsAlg(key.Key, alg) {
		return nil, refuse(RuleJWK, "header jwk cannot verify alg %q", alg)
	}
	return &key, nil
}

// keyFitsAlg reports whether pub is the key type (and curve) alg requires.
func keyFitsAlg(pub crypto.PublicKey, alg string) bool {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch alg {
		case "ES256":
			return k.Curve == elliptic.P256()
		case "ES384":
			return k.Curve == elliptic.P384()
		case "ES512":
			return k.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == "EdDSA"
	case *rsa.PublicKey:
		switch alg {
		case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
			return k.N.BitLen() >= minRSABits
		}
	}
	return false
}

// Thumbprint returns the RFC 7638 SHA-256 thumbprint of jwk, base64url
// without padding: the value of a token's cnf.jkt (RFC 9449 §6.1). Only the
// required members count (EC crv,kty,x,y; RSA e,kty,n; OKP crv,kty,x), so
// kid, alg and use do not change it; a private key has the thumbprint of its
// public half.
func Thumbprint(jwk *jose.JSONWebKey) (string, error) {
	if jwk == nil || jwk.Key == nil {
		return "", errors.New("dpop: thumbprint of an empty key")
	}
	sum, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// ATH returns base64url(SHA-256(accessToken)) without padding: the "ath"
// claim that binds a proof to one access token (RFC 9449 §4.2). Tokens are
// ASCII, so their bytes are their ASCII encoding.
func ATH(accessToken string) string {
	sum := sha256.Sum256([]byte(accessToken))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
