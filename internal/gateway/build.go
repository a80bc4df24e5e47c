package gateway

// What the builder (internal/assemble) needs to turn a configuration into
// Options, in the gateway's own types: the gateway does not import the
// configuration. Each is a small constructor over something unexported.

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/agentwarden/warden/internal/revoke"
	"github.com/agentwarden/warden/internal/transport"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// Dial is an Upstream's Dial: it opens a session's connection to the
// upstream; stateless says the session has no id.
type Dial = func(ctx context.Context, stateless bool) (transport.Conn, error)

// StdioDialer returns the Dial of a stdio server that start launches: a
// stateful session gets a child of its own, and all stateless sessions
// share one child. stop ends that shared child (Upstream.Close).
func StdioDialer(name string, start func(context.Context) (transport.Conn, error), logger *slog.Logger) (dial Dial, stop func()) {
	shared := newSharedUpstream(name, start, logger)
	return func(ctx context.Context, stateless bool) (transport.Conn, error) {
		if stateless {
			return shared.session(), nil
		}
		return start(ctx)
	}, shared.Close
}

// HTTPDialer returns the Dial of an HTTP server: each session gets a client
// made from o (its own copy of o.Header; o.Client is the keep-alive pool
// they share). With creds, each session sends its own session credential.
func HTTPDialer(o transport.HTTPClientOptions, creds *SessionCredentials) Dial {
	return func(ctx context.Context, _ bool) (transport.Conn, error) {
		s := o
		s.Header = o.Header.Clone()
		if creds != nil {
			s.Credential = creds.forSession(scopeFrom(ctx), principalFrom(ctx))
		}
		return transport.NewHTTPClient(s), nil
	}
}

// PermitNone is a requirement list that names no tool: with it as
// ZeroTrust.Requires, only the calls the classification makes Tier 2 or
// more need a token.
func PermitNone() Permitter { return permitNone{} }

// SubjectOf returns the principal a call acts for: its session's
// authenticated client (gateway.auth), else the configured subject (stdio,
// or a listener without authentication).
func SubjectOf(configured string) func(*Call) (string, bool) {
	return func(c *Call) (string, bool) {
		if c.Principal != "" {
			return c.Principal, true
		}
		return configured, configured != ""
	}
}

// AuthorizeEndpoint is the absolute URL of the authorization API under the
// listener's public base (Options.AuthorizeURL); nil when base does not
// parse.
func AuthorizeEndpoint(base string) *url.URL { return authorizeURL(base) }

// IntrospectionHandler answers RFC 7662 introspection requests about the
// session credentials keys signed with issuer iss (Options.Introspect);
// reg decides revocation.
func IntrospectionHandler(keys zerotrust.KeySet, iss string, reg revoke.Registry) http.Handler {
	return introspectionHandler(keys, iss, reg)
}
