package zerotrust

// A session credential is what warden presents to an HTTP upstream on behalf
// of one client session (gateway.upstreams[].session_credential, AASM P8):
// the upstream learns who the session acts for without ever seeing the
// client's own token, and warden revokes it when the session closes.
//
//	header   {"alg":"EdDSA"|"ES256", "kid":<thumbprint>, "typ":"wsc+jwt"}
//	payload  {"iss","aud","sub","sid","iat","nbf","exp","jti"}
//
// typ "wsc+jwt" (warden session credential) differs from the invocation
// token's "wzt+jwt": an upstream that receives one cannot replay it as a
// tool-call token (Verify refuses its typ), and an invocation token cannot
// pass as a session credential. It is signed by the same key ring, so the
// upstream verifies it with the JWKS warden serves, and asks warden's
// introspection endpoint whether it is still active.

import (
	"errors"
	"fmt"
	"time"
)

// SessionTokenType is the typ of a session credential.
const SessionTokenType = "wsc+jwt"

// SessionClaims is the payload of a session credential. Times are
// NumericDates (seconds since the epoch).
type SessionClaims struct {
	Issuer    string `json:"iss"`
	Audience  string `json:"aud"` // the upstream's URL
	Subject   string `json:"sub"` // the principal the session acts for
	Session   string `json:"sid"` // the client session at warden
	IssuedAt  int64  `json:"iat"`
	NotBefore int64  `json:"nbf"`
	Expiry    int64  `json:"exp"`
	ID        string `json:"jti"`
}

// SessionRequest describes the credential IssueSession signs.
type SessionRequest struct {
	Iss, Aud, Sub, Session string        // all required
	TTL                    time.Duration // at least one second
}

// IssueSession signs a session credential for req with the ring's active key.
func IssueSession(ring *KeyRing, req SessionRequest) (string, SessionClaims, error) {
	var c SessionClaims
	if req.Iss == "" || req.Aud == "" || req.Sub == "" || req.Session == "" {
		return "", c, errors.New("a session credential needs an issuer, an audience, a subject and a session")
	}
	if req.TTL < time.Second {
		return "", c, fmt.Errorf("ttl %v is shorter than one second", req.TTL)
	}
	jti, err := randomID()
	if err != nil {
		return "", c, err
	}
	now := ring.now()
	c = SessionClaims{
		Issuer: req.Iss, Audience: req.Aud, Subject: req.Sub, Session: req.Session,
		IssuedAt: now.Unix(), NotBefore: now.Unix(), Expiry: now.Add(req.TTL).Unix(), ID: jti,
	}
	tok, err := ring.signJSON(c, SessionTokenType)
	return tok, c, err
}

// VerifySession checks a session credential's signature (a key of keys,
// typ wsc+jwt), its claims (all present, none unknown), its issuer when iss
// is not empty, and its validity at now within skew. It does not consult
// the revocation registry: that is the caller's.
func VerifySession(keys KeySet, token, iss string, now time.Time, skew time.Duration) (*SessionClaims, error) {
	payload, verr := verifySignature(keys, token, SessionTokenType, "a session credential")
	if verr != nil {
		return nil, verr
	}
	var c SessionClaims
	if err := decodeSessionClaims(payload, &c); err != nil {
		return nil, fmt.Errorf("malformed claims: %w", err)
	}
	for _, r := range []struct {
		name    string
		present bool
	}{
		{"iss", c.Issuer != ""}, {"aud", c.Audience != ""}, {"sub", c.Subject != ""}, {"sid", c.Session != ""},
		{"iat", c.IssuedAt != 0}, {"nbf", c.NotBefore != 0}, {"exp", c.Expiry != 0}, {"jti", c.ID != ""},
	} {
		if !r.present {
			return nil, fmt.Errorf("required claim %s is missing", r.name)
		}
	}
	if iss != "" && c.Issuer != iss {
		return nil, fmt.Errorf("iss %q is not the expected issuer %q", c.Issuer, iss)
	}
	skew = max(skew, 0)
	exp, nbf := time.Unix(c.Expiry, 0), time.Unix(c.NotBefore, 0)
	switch {
	case !now.Add(-skew).Before(exp):
		return nil, fmt.Errorf("credential expired at %s", exp.UTC().Format(time.RFC3339))
	case now.Add(skew).Before(nbf):
		return nil, fmt.Errorf("credential is not valid before %s", nbf.UTC().Format(time.RFC3339))
	}
	return &c, nil
}

// decodeSessionClaims decodes a verified payload strictly, like
// decodeClaimsJSON: exact names, no unknown claim.
func decodeSessionClaims(data []byte, c *SessionClaims) error {
	if err := validJSON(data); err != nil {
		return err
	}
	return eachMember(data, "claims", func(name string, raw []byte) error {
		switch name {
		case "iss":
			return stringMember(name, raw, &c.Issuer)
		case "aud":
			return stringMember(name, raw, &c.Audience)
		case "sub":
			return stringMember(name, raw, &c.Subject)
		case "sid":
			return stringMember(name, raw, &c.Session)
		case "jti":
			return stringMember(name, raw, &c.ID)
		case "iat":
			return intMember(name, raw, &c.IssuedAt)
		case "nbf":
			return intMember(name, raw, &c.NotBefore)
		case "exp":
			return intMember(name, raw, &c.Expiry)
		}
		return fmt.Errorf("unknown claim %q", name)
	})
}
