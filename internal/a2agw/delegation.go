package a2agw

// Delegation chains (AASM P3, the Zero-Trust Tool Invocation Standard's
// INV-7): "for each hop: hop.scope ⊆ parent.scope AND verify(hop.identity)".
//
//	params.message.metadata["io.agentwarden/delegation"] (or params.metadata[...])
//	  = [ hop0, hop1, ..., hopN ]            compact JWS strings, root first
//
//	root (authenticated principal, scopes from Delegation.Roots)
//	  └─ hop0  iss=root        agent=A  scopes ⊆ root's   signed by root's key
//	      └─ hop1 iss=A        agent=B  scopes ⊆ hop0's   signed by A's key, parent=H(hop0)
//	          └─ hopN iss=…    agent=U  scopes ⊆ hopN-1's (U: the upstream agent)
//
// Every hop is verified offline: its signature by a configured key of its
// issuer, its link to the hop before it (issuer = previous agent, parent =
// hash of the previous token, same principal), its lifetime, and the subset
// rule on scopes. The first failure refuses the message with stage
// "delegation", rule "INV-7".

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// MetadataKey is the A2A metadata member that carries a delegation chain, in
// params.message.metadata or params.metadata (not both).
const MetadataKey = "io.agentwarden/delegation"

// HopType is the "typ" header of a delegation hop token.
const HopType = "warden-delegation+jwt"

// Limits of a chain. A chain is small: a few hops of a few hundred bytes.
const (
	DefaultMaxHops     = 8
	maxHopBytes        = 8 << 10
	maxScopesPerHop    = 64
	maxScopeLen        = 256
	DefaultMaxLifetime = time.Hour
	DefaultSkew        = 30 * time.Second
)

// hopAlgs are the JWS algorithms a hop may be signed with: asymmetric only.
var hopAlgs = []jose.SignatureAlgorithm{jose.EdDSA, jose.ES256}

// Hop is the payload of one delegation token: Issuer delegates Scopes to
// Agent, on behalf of Principal. Parent is ParentHash of the token before it
// (empty on the first hop). Times are Unix seconds.
type Hop struct {
	Issuer    string   `json:"iss"`
	Agent     string   `json:"agent"`
	Principal string   `json:"principal"`
	Scopes    []string `json:"scopes"`
	Parent    string   `json:"parent,omitempty"`
	IssuedAt  int64    `json:"iat"`
	Expires   int64    `json:"exp"`
}

// Chain is a verified delegation chain, for the record.
type Chain struct {
	Root   string   // the first hop's issuer: the principal at the root
	Agents []string // each hop's agent, in order; the last is the upstream
	Scopes []string // the last hop's scopes: what the upstream may do
}

// DelegationOptions configure the delegation stage. The zero value verifies
// no chain: a message that carries one is refused (no key can verify it),
// and a message without one passes unless Require is set.
type DelegationOptions struct {
	// Roots maps a principal to the scopes it holds: the bound of any chain
	// it roots. A chain whose root is not listed is refused.
	Roots map[string][]string
	// Keys maps an issuer (a principal or an agent) to the public keys its
	// hops are signed with. A hop whose issuer has no key is refused.
	Keys map[string][]jose.JSONWebKey
	// Agent is the upstream agent's identity: the last hop must delegate to
	// it. "" means the name in the upstream's pinned agent card.
	Agent string
	// Require refuses SendMessage and SendStreamingMessage (and their 0.3
	// names) that carry no chain.
	Require bool
	// MaxHops bounds the chain's length; 0 means DefaultMaxHops.
	MaxHops int
	// MaxLifetime bounds exp - iat of each hop; 0 means DefaultMaxLifetime.
	MaxLifetime time.Duration
	// Skew is the clock tolerance for iat and exp; 0 means DefaultSkew.
	Skew time.Duration
}

// chainError is a refused chain: the check that failed (Detail.Step), the
// hop (-1 for the chain as a whole) and what went wrong.
type chainError struct {
	check string
	hop   int
	msg   string
}

func (e *chainError) Error() string {
	if e.hop < 0 {
		return "delegation chain: " + e.msg
	}
	return "delegation hop " + strconv.Itoa(e.hop) + ": " + e.msg
}

func refuse(check string, hop int, format string, args ...any) *chainError {
	return &chainError{check: check, hop: hop, msg: fmt.Sprintf(format, args...)}
}

// ParseChain reads the raw JSON of the metadata member, a JSON array of
// compact JWS strings, into the tokens and their unverified payloads. It
// checks shape only: lengths, the token syntax, the header (alg, kid, typ
// and nothing else) and the payload's members and types. It never panics.
func ParseChain(raw []byte, maxHops int) (tokens []string, hops []Hop, err error) {
	if maxHops <= 0 {
		maxHops = DefaultMaxHops
	}
	if len(raw) > maxHops*maxHopBytes+64 {
		return nil, nil, refuse("malformed", -1, "larger than %d bytes", maxHops*maxHopBytes+64)
	}
	if err := jsonrpc.Validate(raw, jsonrpc.Limits{MaxDepth: 4}); err != nil {
		return nil, nil, refuse("malformed", -1, "not valid JSON: %v", err)
	}
	var list []json.RawMessage
	if r := bytes.TrimSpace(raw); len(r) == 0 || r[0] != '[' || jsonrpc.Unmarshal(r, &list) != nil {
		return nil, nil, refuse("malformed", -1, "want a JSON array of compact JWS strings")
	}
	if len(list) == 0 || len(list) > maxHops {
		return nil, nil, refuse("malformed", -1, "want 1 to %d hops, got %d", maxHops, len(list))
	}
	for i, item := range list {
		tok, ok := jsonrpc.String(item)
		if !ok {
			return nil, nil, refuse("malformed", i, "not a string")
		}
		h, err := parseHop(tok, i)
		if err != nil {
			return nil, nil, err
		}
		tokens = append(tokens, tok)
		hops = append(hops, h)
	}
	return tokens, hops, nil
}

// b64 is strict base64url without padding: one spelling per byte string.
var b64 = base64.RawURLEncoding.Strict()

// parseHop checks one token's syntax and decodes its payload, unverified.
func parseHop(tok string, i int) (Hop, error) {
	if len(tok) > maxHopBytes {
		return Hop{}, refuse("malformed", i, "token larger than %d bytes", maxHopBytes)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Hop{}, refuse("malformed", i, "not a compact JWS (header.payload.signature)")
	}
	header, err := b64.DecodeString(parts[0])
	if err != nil {
		return Hop{}, refuse("malformed", i, "header is not base64url")
	}
	if err := checkHopHeader(header); err != nil {
		return Hop{}, refuse("malformed", i, "header: %v", err)
	}
	payload, err := b64.DecodeString(parts[1])
	if err != nil {
		return Hop{}, refuse("malformed", i, "payload is not base64url")
	}
	if _, err := b64.DecodeString(parts[2]); err != nil {
		return Hop{}, refuse("malformed", i, "signature is not base64url")
	}
	h, err := decodeHop(payload)
	if err != nil {
		return Hop{}, refuse("malformed", i, "payload: %v", err)
	}
	return h, nil
}

// checkHopHeader accepts a protected header with alg (EdDSA or ES256), an
// optional kid and an optional typ (HopType), and nothing else: no crit, no
// embedded or remote keys.
func checkHopHeader(header []byte) error {
	if err := jsonrpc.Validate(header, jsonrpc.Limits{MaxBytes: 1024, MaxDepth: 1}); err != nil {
		return err
	}
	var alg, typ string
	var bad error
	ok := jsonrpc.Members(header, func(name string, raw []byte) {
		s, isStr := jsonrpc.String(raw)
		switch {
		case bad != nil:
		case !isStr:
			bad = fmt.Errorf("%q must be a string", name)
		case name == "alg":
			alg = s
		case name == "kid":
		case name == "typ":
			typ = s
		default:
			bad = fmt.Errorf("member %q is not allowed", name)
		}
	})
	switch {
	case !ok:
		return errors.New("not a JSON object")
	case bad != nil:
		return bad
	case alg != string(jose.EdDSA) && alg != string(jose.ES256):
		return fmt.Errorf("alg %q: want EdDSA or ES256", alg)
	case typ != "" && typ != HopType:
		return fmt.Errorf("typ %q: want %q", typ, HopType)
	}
	return nil
}

// decodeHop decodes a payload strictly: exactly the members of Hop, with
// their JSON types, scopes an array.
func decodeHop(payload []byte) (Hop, error) {
	// A member not named exactly as one of Hop's ("Scopes", "ISS") is
	// unknown, and refused.
	strict := jsonrpc.UnmarshalOptions{Limits: jsonrpc.Limits{MaxBytes: maxHopBytes, MaxDepth: 3}, RejectUnknownMembers: true}
	var h Hop
	if err := strict.Unmarshal(payload, &h); err != nil {
		return Hop{}, err
	}
	if raw, ok := jsonrpc.Lookup(payload, "scopes"); !ok || len(raw) == 0 || raw[0] != '[' {
		return Hop{}, errors.New(`"scopes" must be an array`)
	}
	switch {
	case h.Issuer == "" || h.Agent == "" || h.Principal == "":
		return Hop{}, errors.New(`"iss", "agent" and "principal" must be non-empty strings`)
	case h.IssuedAt <= 0 || h.Expires <= 0:
		return Hop{}, errors.New(`"iat" and "exp" must be positive integers`)
	case len(h.Scopes) > maxScopesPerHop:
		return Hop{}, fmt.Errorf("more than %d scopes", maxScopesPerHop)
	}
	for _, s := range h.Scopes {
		if err := checkScope(s); err != nil {
			return Hop{}, err
		}
	}
	return h, nil
}

// checkScope accepts a non-empty scope without control characters, with '*'
// only as its last character (a prefix pattern: "mail:*" covers "mail:read").
func checkScope(s string) error {
	if s == "" || len(s) > maxScopeLen {
		return fmt.Errorf("scope %q: want 1 to %d bytes", s, maxScopeLen)
	}
	for i, r := range s {
		switch {
		case r < 0x20 || r == 0x7f:
			return fmt.Errorf("scope %q contains a control character", s)
		case r == '*' && i != len(s)-1:
			return fmt.Errorf("scope %q: '*' may only end a scope", s)
		}
	}
	return nil
}

// covers reports whether the granted scope g includes the scope w.
func covers(g, w string) bool {
	if p, ok := strings.CutSuffix(g, "*"); ok {
		// p has no '*', so a pattern w = "q*" starts with p exactly when
		// q does: every name w covers, g covers too.
		return strings.HasPrefix(w, p)
	}
	return g == w
}

// Subset reports whether every scope of want is covered by a scope of
// granted, and returns the first one that is not.
func Subset(want, granted []string) (bool, string) {
	for _, w := range want {
		ok := false
		for _, g := range granted {
			if covers(g, w) {
				ok = true
				break
			}
		}
		if !ok {
			return false, w
		}
	}
	return true, ""
}

// ParentHash is the "parent" claim a hop carries for the token before it:
// base64url (no padding) of the SHA-256 of the compact token.
func ParentHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return b64.EncodeToString(sum[:])
}

// VerifyChain verifies a chain (the raw JSON of the metadata member) for
// the authenticated principal root ("" when the gateway does not
// authenticate clients: the chain's own root must then be a configured
// root) and the upstream agent. It returns the verified chain or a
// *chainError naming the failed check.
func (o *DelegationOptions) VerifyChain(raw []byte, root, agent string, now time.Time) (*Chain, error) {
	tokens, hops, err := ParseChain(raw, o.MaxHops)
	if err != nil {
		return nil, err
	}
	skew, life := o.Skew, o.MaxLifetime
	if skew <= 0 {
		skew = DefaultSkew
	}
	if life <= 0 {
		life = DefaultMaxLifetime
	}
	first := hops[0]
	if root != "" && first.Issuer != root {
		return nil, refuse("root", 0, "issued by %q, but the chain's root is the authenticated principal %q", first.Issuer, root)
	}
	granted, ok := o.Roots[first.Issuer]
	if !ok {
		return nil, refuse("root", 0, "%q is not a configured delegation root", first.Issuer)
	}
	for i, h := range hops {
		if err := o.verifySignature(tokens[i], h.Issuer, i); err != nil {
			return nil, err
		}
		switch {
		case i == 0 && h.Issuer != h.Principal:
			return nil, refuse("link", i, "the first hop must be issued by its principal %q, not %q", h.Principal, h.Issuer)
		case i == 0 && h.Parent != "":
			return nil, refuse("link", i, "the first hop has no parent")
		case i > 0 && h.Issuer != hops[i-1].Agent:
			return nil, refuse("link", i, "issued by %q, but hop %d delegated to %q", h.Issuer, i-1, hops[i-1].Agent)
		case i > 0 && h.Parent != ParentHash(tokens[i-1]):
			return nil, refuse("link", i, "parent does not match hop %d", i-1)
		case h.Principal != first.Principal:
			return nil, refuse("link", i, "principal %q differs from the chain's %q", h.Principal, first.Principal)
		}
		iat, exp := time.Unix(h.IssuedAt, 0), time.Unix(h.Expires, 0)
		switch {
		case exp.Before(iat) || exp.Sub(iat) > life:
			return nil, refuse("time", i, "lifetime exp-iat must be within 0..%s", life)
		case iat.After(now.Add(skew)):
			return nil, refuse("time", i, "issued in the future")
		case !now.Before(exp.Add(skew)):
			return nil, refuse("time", i, "expired")
		}
		if ok, s := Subset(h.Scopes, granted); !ok {
			parent := "its root " + strconv.Quote(first.Issuer)
			if i > 0 {
				parent = "hop " + strconv.Itoa(i-1)
			}
			return nil, refuse("scope", i, "scope %q is not within %s: delegation may not amplify (INV-7)", s, parent)
		}
		granted = h.Scopes
	}
	last := hops[len(hops)-1]
	if agent == "" {
		return nil, refuse("agent", -1, "the upstream agent's identity is unknown")
	}
	if last.Agent != agent {
		return nil, refuse("agent", len(hops)-1, "delegates to %q, not to this upstream agent %q", last.Agent, agent)
	}
	c := &Chain{Root: first.Issuer, Scopes: last.Scopes}
	for _, h := range hops {
		c.Agents = append(c.Agents, h.Agent)
	}
	return c, nil
}

// verifySignature checks the token's signature with a configured key of
// its issuer: the one named by kid, or any of them when there is no kid.
func (o *DelegationOptions) verifySignature(tok, iss string, i int) error {
	keys := o.Keys[iss]
	if len(keys) == 0 {
		return refuse("signature", i, "no key is configured for issuer %q", iss)
	}
	jws, err := jose.ParseSignedCompact(tok, hopAlgs)
	if err != nil || len(jws.Signatures) != 1 {
		return refuse("signature", i, "unreadable JWS")
	}
	kid := jws.Signatures[0].Header.KeyID
	for _, k := range keys {
		if kid != "" && k.KeyID != "" && k.KeyID != kid {
			continue
		}
		if _, err := jws.Verify(k.Public().Key); err == nil {
			return nil
		}
	}
	return refuse("signature", i, "the signature does not verify with a key of %q", iss)
}

// SignHop signs h with key (its KeyID becomes the kid) and returns the
// compact token. Agents and tests use it to extend a chain: set h.Parent to
// ParentHash of the last token first.
func SignHop(key *jose.JSONWebKey, h Hop) (string, error) {
	alg := jose.SignatureAlgorithm(key.Algorithm)
	if alg == "" {
		alg = jose.EdDSA
	}
	opts := (&jose.SignerOptions{}).WithType(HopType)
	if key.KeyID != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), key.KeyID)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key.Key}, opts)
	if err != nil {
		return "", err
	}
	if h.Scopes == nil {
		h.Scopes = []string{} // "scopes" is always an array
	}
	payload, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}
