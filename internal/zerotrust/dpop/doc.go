// Package dpop verifies and creates DPoP proofs (RFC 9449): short JWTs,
// signed by a client key whose public half travels in the proof header, that
// show the presenter of an access token holds the key the token was bound to.
//
// A proof alone binds nothing. It ties itself to one token through "ath", but
// a thief holding a stolen token can sign a fresh proof with their own key
// and compute "ath" too. The binding is the token's "cnf.jkt" claim: the RFC
// 7638 thumbprint of the client key. Verify returns that thumbprint as
// Proof.JKT; the caller must compare it with the token (zerotrust.md D3).
//
// # What Verify checks
//
// In this order, each failure naming its rule (Error.Rule):
//
//	header-count  exactly one DPoP header (Verify only)
//	malformed     compact JWS, base64url without padding, JSON objects without
//	              duplicate members, no "crit", at most MaxProofSize bytes
//	typ           header typ is exactly "dpop+jwt"
//	alg           alg is in Options.Algs and asymmetric (never none, never HS*)
//	jwk           header jwk present, public only (no "d", "k", ...), and of
//	              the type and curve the alg requires
//	signature     the JWS verifies with that jwk
//	jti           present, non-empty string, at most MaxJTILength bytes
//	htm           equals the request method
//	htu           equals the request URL without query and fragment, after
//	              RFC 3986 §6.2.2 / §6.2.3 normalization
//	iat           |now - iat| <= Options.IATWindow
//	nonce         equals Options.Nonce, when one is set
//	ath           equals ATH(token) when the request carries a token, and is
//	              absent when it does not
//
// The claims are read only after the signature has verified.
//
// # What the caller still does
//
// Verify is stateless. In warden's validation sequence (zerotrust.md D4) DPoP
// is step 6 and single-use consumption is step 9, last, so that a party
// holding a token but not its key cannot burn it:
//
//	1-5  token signature, iss, aud, sub, tool, persona, nbf/exp, parameters_hash
//	6    p, err := dpop.Verify(r.Header, req, opts)        // this package
//	     p.BoundTo(token.Cnf.JKT)                           // cnf.jkt binding
//	7-8  client signature (tier 3), delegation chain
//	9    atomically consume token jti, then p.JTI in a separate "dpop-jti"
//	     namespace of the same store, with a TTL of at least twice IATWindow
//	10   forward; 11 audit
//
// Proof.JTI is whatever the client chose; keep it in its own namespace so a
// proof jti can never collide with a token jti.
//
// # Carriage
//
// Verify reads the DPoP HTTP header. VerifyProof takes the compact proof
// from elsewhere (for example a namespaced key in params._meta over stdio);
// the caller then states the method and URL the proof must name.
package dpop
