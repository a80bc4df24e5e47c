package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/cryptosigner"
)

// claims is the payload NewProof signs.
type claims struct {
	JTI   string `json:"jti"`
	HTM   string `json:"htm"`
	HTU   string `json:"htu"`
	IAT   int64  `json:"iat"`
	ATH   string `json:"ath,omitempty"`
	Nonce string `json:"nonce,omitempty"`
}

// NewProof signs a proof for req: typ dpop+jwt, the public key embedded as
// jwk, claims jti, htm, htu (req.URL without query, fragment and userinfo),
// iat (whole seconds) and, when req.AccessToken is set, ath. key is an
// Ed25519 key (alg EdDSA) or an ECDSA P-256 key (alg ES256); any
// crypto.Signer with such a public key works, so the private key may live in
// a hardware token. jti must be unique per proof, for example 128 random
// bits in base64url.
func NewProof(key crypto.Signer, req Request, jti string, iat time.Time) (string, error) {
	return newProof(key, req, jti, iat, "")
}

func newProof(key crypto.Signer, req Request, jti string, iat time.Time, nonce string) (string, error) {
	if key == nil {
		return "", errors.New("dpop: nil key")
	}
	if jti == "" || len(jti) > MaxJTILength {
		return "", fmt.Errorf("dpop: jti must be 1 to %d bytes", MaxJTILength)
	}
	if req.Method == "" {
		return "", errors.New("dpop: empty method")
	}
	if req.URL == nil {
		return "", errors.New("dpop: nil URL")
	}
	htu := url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host, Path: req.URL.Path, RawPath: req.URL.RawPath}
	if _, err := normalizeURL(&htu); err != nil {
		return "", fmt.Errorf("dpop: request URL: %v", err)
	}
	c := claims{JTI: jti, HTM: req.Method, HTU: htu.String(), IAT: iat.Unix(), Nonce: nonce}
	if req.AccessToken != "" {
		c.ATH = ATH(req.AccessToken)
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return sign(key, payload)
}

// sign returns the compact JWS of payload with a dpop+jwt header that embeds
// the public key.
func sign(key crypto.Signer, payload []byte) (string, error) {
	var sk jose.SigningKey
	switch pub := key.Public().(type) {
	case ed25519.PublicKey:
		sk.Algorithm = jose.EdDSA
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() {
			return "", errors.New("dpop: ECDSA keys must be P-256")
		}
		sk.Algorithm = jose.ES256
	default:
		return "", fmt.Errorf("dpop: unsupported key type %T, want Ed25519 or ECDSA P-256", pub)
	}
	switch k := key.(type) {
	case ed25519.PrivateKey, *ecdsa.PrivateKey:
		sk.Key = k
	default: // hardware or other opaque signer
		sk.Key = cryptosigner.Opaque(key)
	}
	opts := (&jose.SignerOptions{EmbedJWK: true}).WithType(ProofType)
	signer, err := jose.NewSigner(sk, opts)
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}
