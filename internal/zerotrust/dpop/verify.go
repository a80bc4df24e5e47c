package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"hash"
	"math/big"
)

// b64Strict is base64url without padding that refuses non-zero trailing
// bits, so one signature has one encoding.
var b64Strict = base64.RawURLEncoding.Strict()

// verifySignature checks the JWS signature sig over signingInput with pub
// for alg, directly: the header was parsed and checked already, so a second
// JOSE parse would only cost time. alg and pub have been matched by
// keyFitsAlg.
func verifySignature(pub crypto.PublicKey, alg string, signingInput, sig []byte) bool {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return alg == "EdDSA" && ed25519.Verify(k, signingInput, sig)
	case *ecdsa.PublicKey:
		var h hash.Hash
		var size int
		switch alg {
		case "ES256":
			h, size = sha256.New(), 32
		case "ES384":
			h, size = sha512.New384(), 48
		case "ES512":
			h, size = sha512.New(), 66
		default:
			return false
		}
		if len(sig) != 2*size { // JWS: r || s, each of the curve's size (RFC 7518 §3.4)
			return false
		}
		h.Write(signingInput)
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(k, h.Sum(nil), r, s)
	case *rsa.PublicKey:
		var hf crypto.Hash
		pss := false
		switch alg {
		case "RS256", "PS256":
			hf = crypto.SHA256
		case "RS384", "PS384":
			hf = crypto.SHA384
		case "RS512", "PS512":
			hf = crypto.SHA512
		default:
			return false
		}
		pss = alg[0] == 'P'
		h := hf.New()
		h.Write(signingInput)
		digest := h.Sum(nil)
		if pss {
			return rsa.VerifyPSS(k, hf, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
		return rsa.VerifyPKCS1v15(k, hf, digest, sig) == nil
	}
	return false
}
