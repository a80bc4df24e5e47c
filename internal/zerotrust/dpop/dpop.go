package dpop

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// Limits on attacker-chosen sizes.
const (
	// MaxProofSize bounds the compact proof. An RSA-4096 jwk with every
	// claim fits in well under half of it.
	MaxProofSize = 8 << 10
	// MaxJTILength bounds Proof.JTI, which callers store as a replay key.
	MaxJTILength = 256
)

// HeaderName is the HTTP header that carries a proof (RFC 9449 §4.1).
const HeaderName = "DPoP"

// ProofType is the required JOSE typ of a proof.
const ProofType = "dpop+jwt"

// Rules name the check that refused a proof (Error.Rule).
const (
	RuleHeaderCount = "header-count"
	RuleMalformed   = "malformed"
	RuleTyp         = "typ"
	RuleAlg         = "alg"
	RuleJWK         = "jwk"
	RuleSignature   = "signature"
	RuleHTM         = "htm"
	RuleHTU         = "htu"
	RuleIAT         = "iat"
	RuleNonce       = "nonce"
	RuleATH         = "ath"
	RuleJTI         = "jti"
)

// DefaultIATWindow is the accepted |now - iat| when Options.IATWindow is 0.
const DefaultIATWindow = 60 * time.Second

// asymmetric lists every alg Verify can ever accept, whatever Options.Algs
// says: the JWS signature algorithms with a public verification key.
var asymmetric = map[string]bool{
	"ES256": true, "ES384": true, "ES512": true,
	"RS256": true, "RS384": true, "RS512": true,
	"PS256": true, "PS384": true, "PS512": true,
	"EdDSA": true,
}

// Options configures Verify. The zero value is the safe setting: ES256 and
// EdDSA, a 60 s iat window, the system clock, no server nonce.
type Options struct {
	// Algs are the accepted proof algs; nil means ES256 and EdDSA. Entries
	// that are not asymmetric JWS algs (none, HS256, ...) are ignored: they
	// are never accepted; a non-nil empty list accepts nothing.
	Algs []string
	// IATWindow is the accepted |now - iat|; 0 or negative means
	// DefaultIATWindow. A replay store must keep proof jtis at least this
	// long on each side of now.
	IATWindow time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Nonce, if set, must equal the proof's nonce claim (RFC 9449 §8).
	// Refusals carry Rule "nonce", which the caller answers with
	// use_dpop_nonce and a DPoP-Nonce header.
	Nonce string
}

func (o Options) algAllowed(alg string) bool {
	if !asymmetric[alg] {
		return false
	}
	if o.Algs == nil {
		return alg == "ES256" || alg == "EdDSA"
	}
	for _, a := range o.Algs {
		if a == alg {
			return true
		}
	}
	return false
}

func (o Options) window() time.Duration {
	if o.IATWindow <= 0 {
		return DefaultIATWindow
	}
	return o.IATWindow
}

func (o Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// Request is what a proof must name.
type Request struct {
	// Method is the HTTP method, compared exactly with htm.
	Method string
	// URL is the absolute URL the client addressed: scheme and host
	// included. A server-side http.Request.URL has neither; rebuild it from
	// the gateway's configured external origin, never from client-supplied
	// Host or X-Forwarded-* headers alone. Query and fragment are ignored.
	URL *url.URL
	// AccessToken is the token the proof must be bound to through ath, or
	// "" when the request carries none (then ath must be absent).
	AccessToken string
}

// Proof is a verified proof.
type Proof struct {
	// JTI is the proof's unique id; the caller consumes it in its own
	// replay namespace.
	JTI string
	// JKT is the RFC 7638 SHA-256 thumbprint of Key, base64url without
	// padding: what the token's cnf.jkt must equal.
	JKT string
	// IAT is the proof's issued-at time.
	IAT time.Time
	// Key is the public key that signed the proof.
	Key *jose.JSONWebKey
}

// BoundTo reports whether the proof was signed by the key whose thumbprint
// is jkt (a token's cnf.jkt). An empty jkt binds nothing and reports false.
func (p *Proof) BoundTo(jkt string) bool {
	return p != nil && jkt != "" && subtle.ConstantTimeCompare([]byte(p.JKT), []byte(jkt)) == 1
}

// Error is a refused proof: the rule that refused it and why.
type Error struct {
	Rule   string
	Reason string
}

func (e *Error) Error() string { return "dpop: " + e.Rule + ": " + e.Reason }

// OAuthError is the RFC 9449 error code for the refusal: use_dpop_nonce for
// a missing or stale nonce, invalid_dpop_proof for everything else.
func (e *Error) OAuthError() string {
	if e.Rule == RuleNonce {
		return "use_dpop_nonce"
	}
	return "invalid_dpop_proof"
}

func refuse(rule, format string, args ...any) *Error {
	return &Error{Rule: rule, Reason: fmt.Sprintf(format, args...)}
}

// Verify checks the single DPoP header of an HTTP request against req.
// Header names are matched case-insensitively, so a hand-built map with a
// non-canonical "DPoP" key is counted too.
//
// It returns a non-nil *Error, never a nil *Error inside a non-nil error
// interface; assign the result to an error variable only when it is non-nil.
func Verify(headers http.Header, req Request, opts Options) (*Proof, *Error) {
	var values []string
	for k, v := range headers {
		if strings.EqualFold(k, HeaderName) {
			values = append(values, v...)
		}
	}
	if len(values) != 1 {
		return nil, refuse(RuleHeaderCount, "want exactly one DPoP header, got %d", len(values))
	}
	return VerifyProof(values[0], req, opts)
}

// VerifyProof checks one compact proof against req, for carriage outside
// HTTP headers. See the package documentation for the checks and their
// order.
func VerifyProof(proof string, req Request, opts Options) (*Proof, *Error) {
	if len(proof) > MaxProofSize {
		return nil, refuse(RuleMalformed, "proof is %d bytes, limit %d", len(proof), MaxProofSize)
	}
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		return nil, refuse(RuleMalformed, "want a compact JWS of 3 parts, got %d", len(parts))
	}
	hdr, err := decodeObject(parts[0])
	if err != nil {
		return nil, refuse(RuleMalformed, "header: %v", err)
	}
	if _, ok := hdr["crit"]; ok {
		return nil, refuse(RuleMalformed, "header: crit is not supported")
	}
	if typ, _ := stringMember(hdr, "typ"); typ != ProofType {
		return nil, refuse(RuleTyp, "typ is %s, want %q", quote(hdr["typ"]), ProofType)
	}
	alg, _ := stringMember(hdr, "alg")
	if !opts.algAllowed(alg) {
		return nil, refuse(RuleAlg, "alg %s is not allowed", quote(hdr["alg"]))
	}
	key, rerr := publicKey(hdr["jwk"], alg)
	if rerr != nil {
		return nil, rerr
	}
	sig, err := b64Strict.DecodeString(parts[2])
	if err != nil {
		return nil, refuse(RuleMalformed, "signature: not base64url without padding")
	}
	payload, err := b64Strict.DecodeString(parts[1])
	if err != nil {
		return nil, refuse(RuleMalformed, "claims: not base64url without padding")
	}
	if !verifySignature(key.Key, alg, []byte(proof[:len(parts[0])+1+len(parts[1])]), sig) {
		return nil, refuse(RuleSignature, "signature does not verify with the header jwk")
	}
	claims, err := decodeJSONObject(payload)
	if err != nil {
		return nil, refuse(RuleMalformed, "claims: %v", err)
	}
	iat, rerr := checkClaims(claims, req, opts)
	if rerr != nil {
		return nil, rerr
	}
	jkt, err := Thumbprint(key)
	if err != nil {
		return nil, refuse(RuleJWK, "thumbprint: %v", err)
	}
	jti, _ := stringMember(claims, "jti")
	return &Proof{JTI: jti, JKT: jkt, IAT: iat, Key: key}, nil
}

// checkClaims applies the claim rules in the documented order and returns
// the iat.
func checkClaims(claims map[string]json.RawMessage, req Request, opts Options) (time.Time, *Error) {
	jti, ok := stringMember(claims, "jti")
	switch {
	case !ok || jti == "":
		return time.Time{}, refuse(RuleJTI, "jti must be a non-empty string")
	case len(jti) > MaxJTILength:
		return time.Time{}, refuse(RuleJTI, "jti is %d bytes, limit %d", len(jti), MaxJTILength)
	}

	htm, ok := stringMember(claims, "htm")
	if !ok || htm != req.Method {
		return time.Time{}, refuse(RuleHTM, "htm %s does not match method %q", quote(claims["htm"]), req.Method)
	}

	if rerr := checkHTU(claims["htu"], req.URL); rerr != nil {
		return time.Time{}, rerr
	}

	secs, ok := numberMember(claims, "iat")
	if !ok {
		return time.Time{}, refuse(RuleIAT, "iat must be a number")
	}
	now := opts.now()
	window := opts.window()
	skew := secs - float64(now.UnixNano())/1e9
	switch {
	case skew < -window.Seconds():
		return time.Time{}, refuse(RuleIAT, "proof issued %.0fs ago, window %s", -skew, window)
	case skew > window.Seconds():
		return time.Time{}, refuse(RuleIAT, "proof issued %.0fs in the future, window %s", skew, window)
	}
	// Within the window, so the conversion cannot overflow.
	whole, frac := math.Modf(secs)
	iat := time.Unix(int64(whole), int64(frac*1e9))

	if opts.Nonce != "" {
		nonce, _ := stringMember(claims, "nonce")
		if subtle.ConstantTimeCompare([]byte(nonce), []byte(opts.Nonce)) != 1 {
			return time.Time{}, refuse(RuleNonce, "nonce missing or not current")
		}
	}

	_, present := claims["ath"]
	if req.AccessToken == "" {
		if present {
			return time.Time{}, refuse(RuleATH, "ath present but the request carries no access token")
		}
		return iat, nil
	}
	ath, ok := stringMember(claims, "ath")
	if !ok {
		return time.Time{}, refuse(RuleATH, "ath missing; the proof is not bound to the access token")
	}
	if subtle.ConstantTimeCompare([]byte(ath), []byte(ATH(req.AccessToken))) != 1 {
		return time.Time{}, refuse(RuleATH, "ath does not match the access token")
	}
	return iat, nil
}

// decodeObject decodes one base64url (no padding) JSON object.
func decodeObject(b64 string) (map[string]json.RawMessage, error) {
	data, err := b64Strict.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("not base64url without padding")
	}
	return decodeJSONObject(data)
}

// decodeJSONObject decodes a JSON object with exact member names, refusing
// duplicate members anywhere inside it (the JOSE parsers downstream and
// encoding/json would otherwise disagree on which value counts).
func decodeJSONObject(data []byte) (map[string]json.RawMessage, error) {
	// warden's strict decoder: duplicate members at any depth, invalid
	// UTF-8 and lone surrogates are refused in one pass.
	if err := jsonrpc.Validate(data, jsonrpc.Limits{MaxBytes: MaxProofSize}); err != nil {
		var e *jsonrpc.Error
		if errors.As(err, &e) {
			return nil, errors.New(e.Message)
		}
		return nil, fmt.Errorf("invalid JSON")
	}
	m := map[string]json.RawMessage{}
	if !jsonrpc.Members(data, func(name string, raw []byte) { m[name] = raw }) {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}

// stringMember returns m[name] if it is a JSON string. The members come
// from validated JSON, so the string is read directly rather than through
// encoding/json, with its rules: null reads as "".
func stringMember(m map[string]json.RawMessage, name string) (string, bool) {
	raw, ok := m[name]
	if !ok {
		return "", false
	}
	return jsonString(raw)
}

// jsonString reads raw, a validated JSON value, as encoding/json reads it
// into a string: a string, or null as "".
func jsonString(raw json.RawMessage) (string, bool) {
	if string(raw) == "null" {
		return "", true
	}
	return jsonrpc.String(raw)
}

// numberMember returns m[name] if it is a JSON number that a float64 holds,
// with encoding/json's rules: null reads as 0.
func numberMember(m map[string]json.RawMessage, name string) (float64, bool) {
	raw, ok := m[name]
	switch {
	case !ok:
		return 0, false
	case string(raw) == "null":
		return 0, true
	case len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9'):
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}

// quote renders an attacker-supplied JSON value for an error reason, cut
// short so a refusal cannot flood a log line.
func quote(raw json.RawMessage) string {
	if raw == nil {
		return "absent"
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "not a string"
	}
	const limit = 64
	if len(s) > limit {
		s = s[:limit] + "..."
	}
	return strconv.Quote(s)
}
