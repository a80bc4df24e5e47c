package gateway

// Session credentials (gateway.upstreams[].session_credential): AASM P8 for
// what warden presents to an HTTP upstream. Instead of one static secret
// shared by every session, each client session gets its own short-lived JWT,
// and it dies with the session:
//
//	client session s opens ─► Dial(ctx{session s, principal p})
//	  ─► every request to the upstream: Authorization: Bearer <wsc+jwt>
//	       {iss: public URL, aud: upstream URL, sub: p, sid: s, jti, iat, exp}
//	       renewed once half its ttl has passed, while s lasts
//	session s closes (DELETE, idle timeout, upstream exit)
//	  ─► endSession revokes s in the revocation registry
//	upstream: POST /warden/v1/introspect token=<jwt>
//	  ─► {"active":false} once s is revoked, the jwt expired, its signature
//	     or typ is wrong; {"active":true, sub, sid, aud, exp, ...} otherwise
//
// The upstream verifies the signature itself with the JWKS warden serves at
// /.well-known/jwks.json, and asks the introspection endpoint whether the
// credential was revoked. A credential's typ (wsc+jwt) is not an invocation
// token's: an upstream cannot replay it as a tool-call token.
//
// The introspection endpoint does not authenticate its caller (RFC 7662
// §2.1 asks for some authorization "to prevent token scanning"): it answers
// only about a credential the caller presents, whose claims the caller can
// already read, and such credentials are signed and unguessable, so there is
// nothing to scan. What it adds is one bit, whether warden still stands
// behind the credential. Tokens that are not session credentials (invocation
// tokens, anything else) are always inactive.

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/internal/revoke"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// IntrospectPath is where the listener serves token introspection (RFC
// 7662) of session credentials.
const IntrospectPath = "/warden/v1/introspect"

// SessionCredentials mints the session credentials of one HTTP upstream.
type SessionCredentials struct {
	Ring     *zerotrust.KeyRing
	Issuer   string        // warden's public URL
	Audience string        // the upstream's URL
	Header   string        // "Authorization" sends "Bearer <jwt>"; any other header the bare JWT
	TTL      time.Duration // lifetime of each credential
	// Subject is the principal of sessions without an authenticated one
	// (zero_trust.subject); "" refuses them.
	Subject string

	now func() time.Time // the renewal clock; nil means time.Now (tests)
}

// forSession returns the HTTPClientOptions.Credential of the session scope
// with principal: one credential, renewed once half its TTL has passed.
// It records in scope that a credential was issued, so that the session's
// end revokes it even when the session has no id (a stateless request).
func (s *SessionCredentials) forSession(scope *sessionScope, principal string) func() (string, string, error) {
	if principal == "" {
		principal = s.Subject
	}
	var (
		mu    sync.Mutex // guards value and renew
		value string
		renew time.Time
	)
	return func() (string, string, error) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if s.now != nil {
			now = s.now()
		}
		if value != "" && now.Before(renew) {
			return s.Header, value, nil
		}
		scope.credential.Store(true) // before issuing: never a credential the end does not revoke
		tok, _, err := zerotrust.IssueSession(s.Ring, zerotrust.SessionRequest{
			Iss: s.Issuer, Aud: s.Audience, Sub: principal, Session: scope.id, TTL: s.TTL})
		if err != nil {
			return "", "", err
		}
		value, renew = tok, now.Add(s.TTL/2)
		if strings.EqualFold(s.Header, "Authorization") {
			value = "Bearer " + tok
		}
		return s.Header, value, nil
	}
}

// sessionScope is the session a connection to an upstream is dialled for,
// carried to Upstream.Dial in its context.
type sessionScope struct {
	id         string      // the client session id; for a stateless request, one of its own
	credential atomic.Bool // a session credential was issued for it
}

type sessionScopeKey struct{}

// newSessionScope returns ctx carrying the scope of session; a session
// without an id (a stateless request, stdio) gets one of its own, which
// only a session credential ever names.
func newSessionScope(ctx context.Context, session string) (context.Context, *sessionScope) {
	s := &sessionScope{id: session}
	if s.id == "" {
		s.id = "request-" + rand.Text()
	}
	return context.WithValue(ctx, sessionScopeKey{}, s), s
}

// bindingSession is the session a token obtained through c is bound to,
// and the one a session-bound token presented on c must name: c's session
// id; for a call without one (stdio, a stateless HTTP request) the id of the
// connection ServeConn serves it on. A stdio gateway process serves one
// connection, so it is one session; a stateless request is a session of its
// own, and a token bound to a stateful session is refused on it. "" for a
// call checked outside ServeConn without a session id (tests): tokens are
// then issued unbound, and only unbound ones verify.
func bindingSession(ctx context.Context, c *Call) string {
	if c.Session != "" {
		return c.Session
	}
	if s, ok := ctx.Value(sessionScopeKey{}).(*sessionScope); ok {
		return s.id
	}
	return ""
}

// scopeFrom returns the scope in ctx, or a fresh one.
func scopeFrom(ctx context.Context) *sessionScope {
	if s, ok := ctx.Value(sessionScopeKey{}).(*sessionScope); ok {
		return s
	}
	_, s := newSessionScope(ctx, "")
	return s
}

// maxIntrospectBody bounds an introspection request's form.
const maxIntrospectBody = 32 << 10

// introspectionHandler answers RFC 7662 introspection requests about
// session credentials signed by keys with issuer iss: active only while the
// signature, typ, issuer and lifetime hold and reg reports it unrevoked. A
// registry that cannot decide answers inactive (fail-secure).
func introspectionHandler(keys zerotrust.KeySet, iss string, reg revoke.Registry) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxIntrospectBody)
		if err := r.ParseForm(); err != nil || r.PostForm.Get("token") == "" {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_request","error_description":"POST a form with token=<session credential>"}` + "\n"))
			return
		}
		writeIntrospection(w, introspect(r.Context(), keys, iss, reg, r.PostForm.Get("token")))
	})
}

// introspection is an RFC 7662 answer; only Active is set for an inactive
// token.
type introspection struct {
	Active    bool   `json:"active"`
	Subject   string `json:"sub,omitempty"`
	Session   string `json:"sid,omitempty"`
	Audience  string `json:"aud,omitempty"`
	Issuer    string `json:"iss,omitempty"`
	ID        string `json:"jti,omitempty"`
	IssuedAt  int64  `json:"iat,omitempty"`
	Expiry    int64  `json:"exp,omitempty"`
	TokenType string `json:"token_type,omitempty"`
}

// introspect decides one token.
func introspect(ctx context.Context, keys zerotrust.KeySet, iss string, reg revoke.Registry, token string) introspection {
	c, err := zerotrust.VerifySession(keys, token, iss, time.Now(), zerotrust.DefaultSkew)
	if err != nil {
		return introspection{}
	}
	if reg != nil {
		revoked, _, err := reg.Check(ctx, revoke.Token{ID: c.ID, Subject: c.Subject,
			IssuedAt: time.Unix(c.IssuedAt, 0), Session: c.Session})
		if err != nil || revoked {
			return introspection{}
		}
	}
	return introspection{Active: true, Subject: c.Subject, Session: c.Session, Audience: c.Audience,
		Issuer: c.Issuer, ID: c.ID, IssuedAt: c.IssuedAt, Expiry: c.Expiry, TokenType: zerotrust.SessionTokenType}
}

func writeIntrospection(w http.ResponseWriter, in introspection) {
	body, _ := json.Marshal(in) // strings and integers always marshal
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(body, '\n'))
}
