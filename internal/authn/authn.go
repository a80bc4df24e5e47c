// Package authn authenticates the clients of warden's HTTP listener (AASM
// P1, and the MCP authorization specification for resource servers).
//
//	Authorization: Bearer <JWT>  ─► signature by a key of the issuer's JWKS,
//	                                 iss, aud (required: no token meant for
//	                                 another resource), exp/nbf with leeway
//	Authorization: Bearer <key>  ─► a local API key (compared as SHA-256, in
//	                                 constant time)
//	anything else                ─► 401 with WWW-Authenticate: Bearer
//	                                 resource_metadata="…" (RFC 9728)
//
// The credential authenticates the client to warden only: the gateway
// never passes it to an upstream (MCP forbids token passthrough).
package authn

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Principal is an authenticated client.
type Principal struct {
	Subject string   // the JWT's subject claim, or the API key's name
	Method  string   // "bearer" (a JWT) or "api-key"
	Issuer  string   // for a JWT
	Scopes  []string // the JWT's scope claim, split
}

// Failure is a refused request: the HTTP status, the WWW-Authenticate
// challenge, and what went wrong (for the body and the log).
type Failure struct {
	Status    int    // 401 or 403
	Challenge string // WWW-Authenticate value
	Rule      string // "missing", "invalid-token", "audience", "unknown-key", ...
	Message   string
}

func (f *Failure) Error() string { return f.Message }

// Config configures an Authenticator. At least one of the bearer issuer and
// the API keys must be set.
type Config struct {
	// Issuer, Audience and Keys configure JWT bearer tokens. Audience is
	// required with Issuer: a token for another resource is refused.
	Issuer   string
	Audience string
	Keys     KeySource
	// SubjectClaim names the claim that identifies the principal; "" is
	// "sub".
	SubjectClaim string
	// Leeway is the clock tolerance for exp and nbf; 0 means 30 s.
	Leeway time.Duration

	// APIKeys maps a principal's name to the lowercase hex SHA-256 of its
	// key. Only hashes are kept in memory and in configuration.
	APIKeys map[string]string

	// ResourceMetadata is the URL of the RFC 9728 protected resource
	// metadata, advertised in WWW-Authenticate; "" leaves it out.
	ResourceMetadata string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// KeySource returns the issuer's public keys.
type KeySource interface {
	Keys() (jose.JSONWebKeySet, error)
	// Refresh fetches the keys again, e.g. for an unknown kid. It may
	// decline when asked too often.
	Refresh() (jose.JSONWebKeySet, error)
}

// Authenticator checks requests. It is immutable after New and safe for
// concurrent use.
type Authenticator struct {
	cfg     Config
	apiKeys map[string][]byte // name → SHA-256 of the key
}

// allowedAlgs are the JWS algorithms accepted for bearer tokens: asymmetric
// only (no none, no HMAC: the key set is public).
var allowedAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.ES384, jose.EdDSA}

// New checks cfg and returns an Authenticator.
func New(cfg Config) (*Authenticator, error) {
	if cfg.Issuer == "" && len(cfg.APIKeys) == 0 {
		return nil, errors.New("authn: configure a bearer issuer, API keys, or both")
	}
	if cfg.Issuer != "" && (cfg.Audience == "" || cfg.Keys == nil) {
		return nil, errors.New("authn: a bearer issuer needs an audience and a key source")
	}
	if cfg.SubjectClaim == "" {
		cfg.SubjectClaim = "sub"
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = 30 * time.Second
	}
	a := &Authenticator{cfg: cfg, apiKeys: map[string][]byte{}}
	for name, h := range cfg.APIKeys {
		sum, err := hex.DecodeString(h)
		if err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("authn: API key %q: want the lowercase hex SHA-256 of the key", name)
		}
		a.apiKeys[name] = sum
	}
	return a, nil
}

// HashKey returns the value to configure for an API key.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Authenticate returns the principal of r, or why it is refused.
func (a *Authenticator) Authenticate(r *http.Request) (Principal, *Failure) {
	values := r.Header.Values("Authorization")
	if len(values) == 0 {
		return Principal{}, a.fail(http.StatusUnauthorized, "missing", "", "authentication required: send Authorization: Bearer <token>")
	}
	if len(values) > 1 {
		return Principal{}, a.fail(http.StatusBadRequest, "invalid-request", "invalid_request", "more than one Authorization header")
	}
	scheme, cred, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || cred == "" {
		return Principal{}, a.fail(http.StatusUnauthorized, "scheme", "invalid_request", "want Authorization: Bearer <token>")
	}
	if strings.Count(cred, ".") == 2 && a.cfg.Issuer != "" {
		return a.bearer(cred)
	}
	return a.apiKey(cred)
}

func (a *Authenticator) apiKey(key string) (Principal, *Failure) {
	sum := sha256.Sum256([]byte(key))
	for name, want := range a.apiKeys {
		if subtle.ConstantTimeCompare(sum[:], want) == 1 {
			return Principal{Subject: name, Method: "api-key"}, nil
		}
	}
	return Principal{}, a.fail(http.StatusUnauthorized, "invalid-token", "invalid_token", "the token is not a valid credential for this server")
}

func (a *Authenticator) bearer(token string) (Principal, *Failure) {
	invalid := func(rule, format string, args ...any) (Principal, *Failure) {
		return Principal{}, a.fail(http.StatusUnauthorized, rule, "invalid_token", fmt.Sprintf(format, args...))
	}
	tok, err := jwt.ParseSigned(token, allowedAlgs)
	if err != nil {
		return invalid("invalid-token", "the bearer token is not a signed JWT with an allowed algorithm: %v", err)
	}
	if len(tok.Headers) != 1 {
		return invalid("invalid-token", "the bearer token must have one signature")
	}
	kid := tok.Headers[0].KeyID
	set, err := a.cfg.Keys.Keys()
	if err != nil {
		return invalid("keys", "the issuer's keys are unavailable: %v", err)
	}
	keys := set.Key(kid)
	if len(keys) == 0 {
		if set, err = a.cfg.Keys.Refresh(); err == nil {
			keys = set.Key(kid)
		}
	}
	if len(keys) == 0 {
		return invalid("unknown-key", "the bearer token's key %q is not one of the issuer's", kid)
	}
	var claims jwt.Claims
	var extra map[string]any
	verified := false
	for _, k := range keys {
		if k.IsPublic() && tok.Claims(k.Key, &claims, &extra) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return invalid("signature", "the bearer token's signature does not verify")
	}
	now := time.Now
	if a.cfg.Now != nil {
		now = a.cfg.Now
	}
	err = claims.ValidateWithLeeway(jwt.Expected{Issuer: a.cfg.Issuer, AnyAudience: jwt.Audience{a.cfg.Audience}, Time: now()}, a.cfg.Leeway)
	switch {
	case errors.Is(err, jwt.ErrInvalidAudience):
		return invalid("audience", "the bearer token is not meant for this server (aud %v, want %q)", []string(claims.Audience), a.cfg.Audience)
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return invalid("issuer", "the bearer token's issuer %q is not %q", claims.Issuer, a.cfg.Issuer)
	case err != nil:
		return invalid("claims", "the bearer token is not valid now: %v", err)
	}
	if claims.Expiry == nil {
		return invalid("claims", "the bearer token has no exp")
	}
	sub, _ := extra[a.cfg.SubjectClaim].(string)
	if sub == "" {
		return invalid("claims", "the bearer token has no %s claim", a.cfg.SubjectClaim)
	}
	p := Principal{Subject: sub, Method: "bearer", Issuer: claims.Issuer}
	if s, ok := extra["scope"].(string); ok {
		p.Scopes = strings.Fields(s)
	}
	return p, nil
}

// fail builds a refusal with the Bearer challenge of RFC 6750 §3, pointing
// at the protected resource metadata (RFC 9728 §5.1).
func (a *Authenticator) fail(status int, rule, errCode, msg string) *Failure {
	var params []string
	if a.cfg.ResourceMetadata != "" {
		params = append(params, `resource_metadata="`+a.cfg.ResourceMetadata+`"`)
	}
	if errCode != "" {
		params = append(params, `error="`+errCode+`"`, `error_description="`+strings.ReplaceAll(msg, `"`, `'`)+`"`)
	}
	challenge := "Bearer"
	if len(params) > 0 {
		challenge += " " + strings.Join(params, ", ")
	}
	return &Failure{Status: status, Challenge: challenge, Rule: rule, Message: msg}
}

// Same reports whether p and q are the same principal: a session's later
// requests must come from whoever opened it.
func (p Principal) Same(q Principal) bool {
	return p.Subject == q.Subject && p.Method == q.Method && p.Issuer == q.Issuer
}

// HasScope reports whether p holds scope.
func (p Principal) HasScope(scope string) bool { return slices.Contains(p.Scopes, scope) }
