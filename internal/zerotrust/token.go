package zerotrust

// An invocation token authorizes one call of one tool on one upstream, with
// exactly the approved arguments, by one subject, for at most 30 seconds,
// and, when it was obtained through a client session, on that session only.
// It is a compact JWS signed by the key ring's active key:
//
//	header   {"alg":"EdDSA"|"ES256", "kid":<thumbprint>, "typ":"wzt+jwt"}
//	payload  {"iss","aud","sub","iat","nbf","exp","jti","upstream","tool",
//	          "parameters_hash","hash_alg":"SHA256","binding_mode",
//	          "session_hash"?, "schema_hash"?, "persona"?, "classification"?,
//	          "cnf":{"jkt"}?, "txn":{"id","timestamp"}}
//
// upstream is the name of the gateway upstream the call was approved for:
// the same tool name on another server is another tool (D8). session_hash,
// in a token warden issued inside a client session, is SessionHash(the
// session id): the token names its session without carrying the id, which
// is a credential of its own.
//
// typ is "wzt+jwt" (warden zero-trust token; explicit typing, RFC 8725 §3.11)
// so that no other JWT signed by the same key, and no DPoP proof (dpop+jwt)
// or OAuth access token (at+jwt), can be presented as an invocation token,
// and this token cannot pass as one of those where typ is checked.
//
// Verify runs the standard's sequence in warden's order (zerotrust.md D4) and
// stops at the first failure, naming one invariant:
//
//	1  signature, iss, aud           "signature" | "claims"
//	2  sub == authenticated subject  INV-1
//	3  upstream, tool == the call's  INV-1
//	   session_hash == the call's
//	   session, when present
//	3a persona (when expected)       "claims"
//	4  nbf ≤ now < exp (± skew),     INV-2
//	   iat < exp, nbf ≤ exp,
//	   exp-iat ≤ 30s (no skew)
//	5  parameters_hash               INV-3
//
// DPoP (INV-5, cnf.jkt) and the single-use consumption of jti (INV-4) come
// after, and are the caller's: Verify consumes nothing.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// Token constants.
const (
	TokenType       = "wzt+jwt"
	HashAlgSHA256   = "SHA256"
	DefaultIssuer   = "warden"
	DefaultAudience = "warden-gateway"
	// MaxTTL is the longest lifetime the standard allows (D5: exp-iat ≤ 30 s).
	MaxTTL = 30 * time.Second
	// DefaultSkew is the clock skew a verifier should normally tolerate.
	DefaultSkew = 5 * time.Second
	// maxTokenBytes bounds what Verify and Inspect will parse.
	maxTokenBytes = 16 << 10
)

// Binding modes: where the parameters hash came from (Axiom 5).
const (
	BindingAdHoc      = "ad-hoc"      // client-side, at user approval (MCP)
	BindingPreDefined = "pre-defined" // server-side, at mandate definition (AP2)
	BindingHybrid     = "hybrid"      // server schema, client values
)

// Claims is the payload of an invocation token. Times are NumericDates
// (seconds since the epoch).
type Claims struct {
	Issuer         string `json:"iss"`
	Audience       string `json:"aud"`
	Subject        string `json:"sub"`
	IssuedAt       int64  `json:"iat"`
	NotBefore      int64  `json:"nbf"`
	Expiry         int64  `json:"exp"`
	ID             string `json:"jti"`
	Upstream       string `json:"upstream"` // the gateway upstream the call was approved for
	Tool           string `json:"tool"`
	ParametersHash string `json:"parameters_hash"`
	HashAlg        string `json:"hash_alg"`
	BindingMode    string `json:"binding_mode"`
	// SchemaHash, in hybrid tokens (binding mode C), is SchemaHash of the
	// tool's inputSchema as the server defined it when the token was
	// issued: the token then binds the server's schema and the client's
	// values, and a changed tool definition voids it.
	SchemaHash string `json:"schema_hash,omitempty"`
	// SessionHash, in a token obtained through a client session, is
	// SessionHash of that session's id: the token is valid on it only.
	SessionHash    string        `json:"session_hash,omitempty"`
	Persona        string        `json:"persona,omitempty"`
	Classification int           `json:"classification,omitempty"`
	Confirmation   *Confirmation `json:"cnf,omitempty"`
	Transaction    Transaction   `json:"txn"`
}

// Confirmation binds a token to a DPoP key (RFC 9449 §6.1).
type Confirmation struct {
	// JKT is the RFC 7638 SHA-256 thumbprint of the client's public key,
	// base64url without padding.
	JKT string `json:"jkt"`
}

// Transaction is the standard's transaction block.
type Transaction struct {
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"` // RFC 3339, UTC, milliseconds
}

// IssueRequest describes the one call a token authorizes.
type IssueRequest struct {
	Sub      string // the authenticated user
	Upstream string // the gateway upstream the call goes to (required)
	Tool     string // the canonical upstream tool (D8), not a client-visible alias
	// Session, if not "", is the client session the token is obtained
	// through: the token then verifies on that session only. It is carried
	// as SessionHash(Session), never as the id itself.
	Session   string
	Arguments []byte // the approved arguments; nil or empty means {}
	// ParametersHash, when set, is ParamsHash(Arguments) already computed
	// by the caller (the gateway hashes a call's arguments once); Arguments
	// is then not hashed again. It must be a lowercase hex SHA-256.
	ParametersHash string

	TTL            time.Duration // lifetime; zero means MaxTTL (30 s)
	Aud            string        // zero means DefaultAudience
	Iss            string        // zero means DefaultIssuer
	Persona        string        // optional role of the presenter (step 3a)
	Classification int           // optional data classification, 1..5
	DPoPJKT        string        // optional: bind to this DPoP key thumbprint (cnf.jkt)
	BindingMode    string        // zero means BindingAdHoc
	// SchemaHash is required for BindingHybrid, and only allowed with it:
	// SchemaHash(the tool's inputSchema).
	SchemaHash string
	TxnID      string // optional transaction id; zero means a random one

	// UnsafeMaxTTL raises the 30 s cap on TTL. It weakens the standard
	// (Axiom 3, D5): a stolen token stays usable for longer, and verifiers
	// refuse it unless their Expect.UnsafeMaxTTL is raised too.
	UnsafeMaxTTL time.Duration
}

// Issue signs a token for req with the ring's active key and returns it with
// its claims.
func Issue(ring *KeyRing, req IssueRequest) (string, Claims, error) {
	var c Claims
	if req.Sub == "" || req.Tool == "" || req.Upstream == "" {
		return "", c, errors.New("issuing a token needs a subject, an upstream and a tool")
	}
	maxTTL := max(req.UnsafeMaxTTL, MaxTTL)
	ttl := req.TTL
	if ttl == 0 {
		ttl = MaxTTL
	}
	if ttl < time.Second {
		return "", c, fmt.Errorf("ttl %v is shorter than one second", ttl)
	}
	if ttl > maxTTL {
		return "", c, fmt.Errorf("ttl %v exceeds the %v the standard allows", ttl, maxTTL)
	}
	mode := req.BindingMode
	if mode == "" {
		mode = BindingAdHoc
	}
	if !validBindingMode(mode) {
		return "", c, fmt.Errorf("binding mode %q (want %s, %s or %s)", mode, BindingAdHoc, BindingPreDefined, BindingHybrid)
	}
	if req.Classification < 0 || req.Classification > 5 {
		return "", c, fmt.Errorf("classification %d is outside 1..5", req.Classification)
	}
	if (mode == BindingHybrid) != (req.SchemaHash != "") {
		return "", c, errors.New("a hybrid token needs the schema hash, and only a hybrid token carries one")
	}
	if req.SchemaHash != "" && !isHexSHA256(req.SchemaHash) {
		return "", c, fmt.Errorf("schema hash %q is not a lowercase hex SHA-256", req.SchemaHash)
	}
	if req.DPoPJKT != "" && !kidPattern.MatchString(req.DPoPJKT) {
		return "", c, fmt.Errorf("dpop jkt %q is not a base64url SHA-256 JWK thumbprint", req.DPoPJKT)
	}
	hash := req.ParametersHash
	if hash != "" && !isHexSHA256(hash) {
		return "", c, fmt.Errorf("parameters hash %q is not a lowercase hex SHA-256", hash)
	}
	if hash == "" {
		var err error
		if hash, _, err = ParamsHash(req.Arguments); err != nil {
			return "", c, fmt.Errorf("arguments: %w", err)
		}
	}
	jti, err := randomID()
	if err != nil {
		return "", c, err
	}
	txn := req.TxnID
	if txn == "" {
		if txn, err = randomID(); err != nil {
			return "", c, err
		}
	}
	now := ring.now()
	c = Claims{
		Issuer:         orDefault(req.Iss, DefaultIssuer),
		Audience:       orDefault(req.Aud, DefaultAudience),
		Subject:        req.Sub,
		IssuedAt:       now.Unix(),
		NotBefore:      now.Unix(),
		Expiry:         now.Unix() + int64(ttl/time.Second),
		ID:             jti,
		Upstream:       req.Upstream,
		Tool:           req.Tool,
		ParametersHash: hash,
		HashAlg:        HashAlgSHA256,
		BindingMode:    mode,
		SchemaHash:     req.SchemaHash,
		SessionHash:    sessionHashOf(req.Session),
		Persona:        req.Persona,
		Classification: req.Classification,
		Transaction:    Transaction{ID: txn, Timestamp: now.UTC().Format("2006-01-02T15:04:05.000Z07:00")},
	}
	if req.DPoPJKT != "" {
		c.Confirmation = &Confirmation{JKT: req.DPoPJKT}
	}
	tok, err := ring.signJSON(c, TokenType)
	return tok, c, err
}

// signJSON signs the JSON form of claims with the ring's current key, as a
// compact JWS whose header says typ.
func (r *KeyRing) signJSON(claims any, typ jose.ContentType) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	key, err := r.Signer()
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(key, (&jose.SignerOptions{}).WithType(typ))
	if err != nil {
		return "", err
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return obj.CompactSerialize()
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// SessionHash is what a token bound to the client session id carries in
// session_hash: the lowercase hex SHA-256 of the id. warden's session ids
// are 128 random bits, so the hash cannot be turned back into the id, and a
// token that leaks (a log, a trace) does not leak its session.
func SessionHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// sessionHashOf is SessionHash, and "" for no session.
func sessionHashOf(id string) string {
	if id == "" {
		return ""
	}
	return SessionHash(id)
}

func validBindingMode(m string) bool {
	return m == BindingAdHoc || m == BindingPreDefined || m == BindingHybrid
}

// randomID returns 128 random bits, base64url without padding.
func randomID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Expect is the call a token is verified against.
type Expect struct {
	Sub      string // the authenticated principal (D7); empty never matches
	Upstream string // the gateway upstream the call goes to; empty never matches
	Tool     string // the canonical upstream tool; empty never matches
	// Session is the client session the call arrives on, "" for none. A
	// token bound to a session (session_hash) verifies on that session
	// only; a token without session_hash on any.
	Session   string
	Arguments []byte // the arguments that will be forwarded; nil or empty means {}
	// ParametersHash, when set, is ParamsHash(Arguments) already computed by
	// the caller (the gateway hashes once per call and forwards the canonical
	// bytes); Arguments is then not hashed again.
	ParametersHash string
	// SchemaHash is SchemaHash of the tool's current inputSchema, "" when
	// unknown. A hybrid token verifies only when it equals the token's.
	SchemaHash string
	Aud        string // zero means DefaultAudience
	Iss        string // zero means DefaultIssuer
	Persona    string // when set, the token's persona must equal it (step 3a)

	Now  time.Time     // zero means time.Now()
	Skew time.Duration // tolerated clock skew; zero tolerates none (DefaultSkew is typical)

	// UnsafeMaxTTL raises the 30 s cap on exp-iat, to accept tokens issued
	// with IssueRequest.UnsafeMaxTTL. It weakens the standard (D5).
	UnsafeMaxTTL time.Duration
}

// VerifyError is why a token does not authorize a call. Each names exactly
// one invariant and the step of the validation sequence that failed.
type VerifyError struct {
	Invariant string // "INV-1".."INV-6", or "signature", "claims"
	Step      string // the standard's step, e.g. "5" or "3a"
	Reason    string
	// JTI is the token's jti once the signature verified, for the audit
	// record; empty before.
	JTI string
}

var invariantNames = map[string]string{
	"INV-1": "identity-tool binding",
	"INV-2": "temporal validity",
	"INV-3": "parameter integrity",
	"INV-4": "atomic consumption",
	"INV-5": "transport binding",
	"INV-6": "client signature",
}

// Error renders one line, e.g.
// "INV-3 parameter integrity: parameters_hash does not match the arguments (step 5)".
func (e *VerifyError) Error() string {
	if name, ok := invariantNames[e.Invariant]; ok {
		return fmt.Sprintf("%s %s: %s (step %s)", e.Invariant, name, e.Reason, e.Step)
	}
	return fmt.Sprintf("%s: %s (step %s)", e.Invariant, e.Reason, e.Step)
}

func fail(inv, step, format string, args ...any) *VerifyError {
	return &VerifyError{Invariant: inv, Step: step, Reason: fmt.Sprintf(format, args...)}
}

// Verify checks that token authorizes exactly the call in want, with a key
// from keys, and returns its claims. It neither consumes jti nor checks DPoP:
// the caller checks cnf.jkt against the proof, then consumes jti, last.
func Verify(keys KeySet, token string, want Expect) (*Claims, *VerifyError) {
	payload, verr := verifySignature(keys, token, TokenType, "an invocation token")
	if verr != nil {
		return nil, verr
	}
	c, verr := decodeClaims(payload)
	if verr != nil {
		return nil, verr
	}
	if verr := checkClaims(c, want); verr != nil {
		verr.JTI = c.ID
		return nil, verr
	}
	return c, nil
}

// header is the part of the protected header Verify looks at.
type header struct {
	Alg, Kid, Typ string
	Crit, B64     bool // present, with any value
}

// verifySignature is step 1 up to the signature: it returns the verified
// payload of a token whose typ is typ (what names that kind of token).
func verifySignature(keys KeySet, token, typ, what string) ([]byte, *VerifyError) {
	const inv, step = "signature", "1"
	if len(token) > maxTokenBytes {
		return nil, fail(inv, step, "token of %d bytes is larger than %d", len(token), maxTokenBytes)
	}
	if n := strings.Count(token, "."); n != 2 {
		return nil, fail(inv, step, "malformed token: not a compact JWS (want 3 parts, got %d)", n+1)
	}
	dot1 := strings.IndexByte(token, '.')
	dot2 := dot1 + 1 + strings.IndexByte(token[dot1+1:], '.')
	head, body, sigPart := token[:dot1], token[dot1+1:dot2], token[dot2+1:]
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return nil, fail(inv, step, "malformed token header: %v", err)
	}
	h, err := decodeHeader(raw)
	if err != nil {
		return nil, fail(inv, step, "malformed token header: %v", err)
	}
	if h.Alg != AlgEdDSA && h.Alg != AlgES256 {
		return nil, fail(inv, step, "alg %q is not allowed (want %s or %s)", h.Alg, AlgEdDSA, AlgES256)
	}
	if got := strings.TrimPrefix(strings.ToLower(h.Typ), "application/"); got != typ {
		return nil, fail(inv, step, "typ %q is not %q: not %s", h.Typ, typ, what)
	}
	if h.Crit || h.B64 {
		return nil, fail(inv, step, "critical header extensions are not supported")
	}
	if h.Kid == "" {
		return nil, fail(inv, step, "token has no kid")
	}
	key, ok := keys.VerificationKey(h.Kid)
	if !ok {
		return nil, fail(inv, step, "unknown or expired kid %q", h.Kid)
	}
	if key.Algorithm != h.Alg {
		return nil, fail(inv, step, "kid %q is an %s key, but the token says %s", h.Kid, key.Algorithm, h.Alg)
	}
	// Verify directly on the parts already split: the header is parsed
	// above, so a second JWS parse would only cost time. Strict base64
	// leaves one encoding per signature (no malleable trailing bits).
	sig, err := b64Strict.DecodeString(sigPart)
	if err != nil {
		return nil, fail(inv, step, "malformed token signature: %v", err)
	}
	if !verifyJWS(key, h.Alg, []byte(token[:dot2]), sig) {
		return nil, fail(inv, step, "signature does not verify with kid %q", h.Kid)
	}
	payload, err := b64Strict.DecodeString(body)
	if err != nil {
		return nil, fail(inv, step, "malformed token payload: %v", err)
	}
	return payload, nil
}

// b64Strict is base64url without padding, refusing non-zero trailing bits.
var b64Strict = base64.RawURLEncoding.Strict()

// verifyJWS checks a JWS signature over signed with key: Ed25519 for EdDSA,
// P-256 r||s (RFC 7518 §3.4) for ES256.
func verifyJWS(key jose.JSONWebKey, alg string, signed, sig []byte) bool {
	switch pub := key.Key.(type) {
	case ed25519.PublicKey:
		return alg == AlgEdDSA && ed25519.Verify(pub, signed, sig)
	case *ecdsa.PublicKey:
		if alg != AlgES256 || pub.Curve != elliptic.P256() || len(sig) != 64 {
			return false
		}
		digest := sha256.Sum256(signed)
		r := new(big.Int).SetBytes(sig[:32])
		s := new(big.Int).SetBytes(sig[32:])
		return ecdsa.Verify(pub, digest[:], r, s)
	}
	return false
}

// decodeClaims decodes a verified payload strictly: duplicate keys, unknown
// claims (a claim warden does not understand might have narrowed the grant)
// and missing required claims are refused.
func decodeClaims(payload []byte) (*Claims, *VerifyError) {
	const inv, step = "claims", "1"
	var c Claims
	if err := decodeClaimsJSON(payload, &c); err != nil {
		return nil, fail(inv, step, "malformed claims: %v", err)
	}
	for _, r := range []struct {
		name    string
		present bool
	}{
		{"iss", c.Issuer != ""}, {"aud", c.Audience != ""}, {"sub", c.Subject != ""},
		{"iat", c.IssuedAt != 0}, {"nbf", c.NotBefore != 0}, {"exp", c.Expiry != 0},
		{"jti", c.ID != ""}, {"upstream", c.Upstream != ""}, {"tool", c.Tool != ""}, {"parameters_hash", c.ParametersHash != ""},
		{"hash_alg", c.HashAlg != ""}, {"binding_mode", c.BindingMode != ""},
		{"txn.id", c.Transaction.ID != ""},
	} {
		if !r.present {
			return nil, fail(inv, step, "required claim %s is missing", r.name)
		}
	}
	if !validBindingMode(c.BindingMode) {
		return nil, fail(inv, step, "binding_mode %q is not one of %s, %s, %s", c.BindingMode, BindingAdHoc, BindingPreDefined, BindingHybrid)
	}
	if (c.BindingMode == BindingHybrid) != (c.SchemaHash != "") {
		return nil, fail(inv, step, "a hybrid token needs schema_hash, and only a hybrid token may carry one")
	}
	if c.Classification < 0 || c.Classification > 5 {
		return nil, fail(inv, step, "classification %d is outside 1..5", c.Classification)
	}
	if c.Confirmation != nil && c.Confirmation.JKT == "" {
		return nil, fail(inv, step, "cnf has no jkt")
	}
	if c.SessionHash != "" && !isHexSHA256(c.SessionHash) {
		return nil, fail(inv, step, "session_hash %q is not a lowercase hex SHA-256", c.SessionHash)
	}
	return &c, nil
}

// strictJSON decodes data into v, refusing duplicate keys and invalid UTF-8,
// and unknown fields when strict.
func strictJSON(data []byte, v any, strict bool) error {
	if err := jsonrpc.Validate(data, jsonrpc.Limits{MaxBytes: maxTokenBytes}); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "jsonrpc -32700: "))
	}
	// encoding/json matches member names case-insensitively, so {"sub":"a",
	// "SUB":"b"} would decode as b. Only exact names may fill a field.
	if err := exactNames(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	return dec.Decode(v)
}

// knownNames are the member names of token headers and claims, at any level.
var knownNames = []string{"alg", "kid", "typ", "crit", "b64", "iss", "aud", "sub", "iat", "nbf", "exp", "jti",
	"upstream", "tool", "parameters_hash", "hash_alg", "binding_mode", "schema_hash", "session_hash", "persona",
	"classification", "cnf", "jkt", "txn", "id", "timestamp"}

// exactNames refuses, in valid JSON, any object member whose name equals a
// known name only when case is ignored.
func exactNames(data []byte) error {
	var err error
	var walk func(obj []byte)
	walk = func(obj []byte) {
		jsonrpc.Members(obj, func(name string, value []byte) {
			for _, k := range knownNames {
				if name != k && strings.EqualFold(name, k) && err == nil {
					err = fmt.Errorf("member %q differs from %q only in case", name, k)
				}
			}
			if len(value) > 0 && value[0] == '{' {
				walk(value)
			}
		})
	}
	walk(data)
	return err
}

// checkClaims runs steps 1 (iss, aud) to 5 on verified claims.
func checkClaims(c *Claims, want Expect) *VerifyError {
	if iss := orDefault(want.Iss, DefaultIssuer); c.Issuer != iss {
		return fail("claims", "1", "iss %q is not the expected issuer %q", c.Issuer, iss)
	}
	if aud := orDefault(want.Aud, DefaultAudience); c.Audience != aud {
		return fail("claims", "1", "aud %q is not the expected audience %q", c.Audience, aud)
	}
	if want.Sub == "" {
		return fail("INV-1", "2", "no authenticated subject to compare sub with")
	}
	if c.Subject != want.Sub {
		return fail("INV-1", "2", "sub %q is not the authenticated user %q", c.Subject, want.Sub)
	}
	if want.Upstream == "" || c.Upstream != want.Upstream {
		return fail("INV-1", "3", "upstream %q is not the upstream %q the call goes to", c.Upstream, want.Upstream)
	}
	if want.Tool == "" || c.Tool != want.Tool {
		return fail("INV-1", "3", "tool %q is not the requested tool %q", c.Tool, want.Tool)
	}
	if c.SessionHash != "" {
		switch {
		case want.Session == "":
			return fail("INV-1", "3", "the token is bound to a client session, and the call arrives on none")
		case subtle.ConstantTimeCompare([]byte(SessionHash(want.Session)), []byte(c.SessionHash)) != 1:
			return fail("INV-1", "3", "the token is bound to another client session than the one the call arrives on")
		}
	}
	if want.Persona != "" && c.Persona != want.Persona {
		return fail("claims", "3a", "persona %q is not the authorized role %q", c.Persona, want.Persona)
	}
	if verr := checkTime(c, want); verr != nil {
		return verr
	}
	if c.HashAlg != HashAlgSHA256 {
		return fail("INV-3", "5", "hash_alg %q is not supported (want %s)", c.HashAlg, HashAlgSHA256)
	}
	hash := want.ParametersHash
	if hash == "" {
		var err error
		if hash, _, err = ParamsHash(want.Arguments); err != nil {
			return fail("INV-3", "5", "the arguments cannot be hashed: %v", strings.TrimPrefix(err.Error(), "jsonrpc -32700: "))
		}
	}
	if subtle.ConstantTimeCompare([]byte(hash), []byte(c.ParametersHash)) != 1 {
		return fail("INV-3", "5", "parameters_hash does not match the arguments")
	}
	if c.BindingMode == BindingHybrid {
		switch {
		case want.SchemaHash == "":
			return fail("INV-3", "5", "the token is hybrid, and the tool's current inputSchema is unknown (list the tools first)")
		case subtle.ConstantTimeCompare([]byte(want.SchemaHash), []byte(c.SchemaHash)) != 1:
			return fail("INV-3", "5", "schema_hash does not match the tool's current inputSchema: the tool changed since the token was issued")
		}
	}
	return nil
}

// checkTime is step 4, INV-2: nbf ≤ now < exp within skew, iat not in the
// future, iat < exp, nbf ≤ exp, and a lifetime of at most 30 s (D5).
//
// Skew widens only the comparisons with now (the verifier's clock against
// the issuer's). The lifetime is the issuer's own difference exp-iat, on one
// clock: no skew applies to it, or a 30 s cap would admit 35 s tokens.
func checkTime(c *Claims, want Expect) *VerifyError {
	const inv, step = "INV-2", "4"
	now := want.Now
	if now.IsZero() {
		now = time.Now()
	}
	skew := max(want.Skew, 0)
	maxTTL := max(want.UnsafeMaxTTL, MaxTTL)
	exp, nbf, iat := time.Unix(c.Expiry, 0), time.Unix(c.NotBefore, 0), time.Unix(c.IssuedAt, 0)
	switch {
	case !iat.Before(exp):
		return fail(inv, step, "token expires (exp %s) no later than it was issued (iat %s)", exp.UTC().Format(time.RFC3339), iat.UTC().Format(time.RFC3339))
	case nbf.After(exp):
		return fail(inv, step, "token becomes valid (nbf %s) after it expires (exp %s)", nbf.UTC().Format(time.RFC3339), exp.UTC().Format(time.RFC3339))
	case exp.Sub(iat) > maxTTL:
		return fail(inv, step, "lifetime exp-iat of %v exceeds %v", exp.Sub(iat), maxTTL)
	case !now.Add(-skew).Before(exp):
		return fail(inv, step, "token expired at %s (now %s)", exp.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case now.Add(skew).Before(nbf):
		return fail(inv, step, "token is not valid before %s (now %s)", nbf.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case now.Add(skew).Before(iat):
		return fail(inv, step, "token was issued in the future (iat %s)", iat.UTC().Format(time.RFC3339))
	}
	return nil
}

// Inspect decodes a token's header and claims WITHOUT verifying anything:
// nothing it returns may be trusted. For display and debugging only.
func Inspect(token string) (header, claims json.RawMessage, err error) {
	if len(token) > maxTokenBytes {
		return nil, nil, fmt.Errorf("token of %d bytes is larger than %d", len(token), maxTokenBytes)
	}
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		return nil, nil, fmt.Errorf("not a compact JWS (want 3 parts, got %d)", len(parts))
	}
	var out [2]json.RawMessage
	for i, name := range []string{"header", "claims"} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", name, err)
		}
		if !json.Valid(raw) {
			return nil, nil, fmt.Errorf("%s is not JSON", name)
		}
		out[i] = raw
	}
	return out[0], out[1], nil
}
