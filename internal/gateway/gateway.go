// Package gateway is warden's guard: a relay between MCP clients and MCP
// servers that validates every message, runs it through a pipeline of named
// stages, and forwards exactly the bytes it validated.
//
// A Gateway serves one or more named upstreams. Each client session gets its
// own connection to its upstream (a child process for stdio servers, an
// upstream HTTP session for HTTP servers) and a Relay between the two:
//
//	MCP client ─► listener (/mcp, /mcp/<name>) ─► session Conn ─┐
//	                                                           Relay ─► pipeline ─► upstream Conn ─► MCP server
//	MCP client ─► stdio (warden gateway --stdio) ─────────────┘
//
// The package knows nothing of configuration files and does not import
// them: internal/assemble builds Options from one (assemble.FromConfig) and
// the demo builds them in code.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/pin"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/transport"
)

// Upstream is one MCP server behind the gateway.
type Upstream struct {
	// Name addresses the upstream: it is served at <path>/<name>.
	Name string
	// Transport describes how warden reaches it, for logs: "stdio", "http"
	// or "in-process".
	Transport string
	// Dial opens a new connection to the upstream for one session. stateless
	// tells whether the session is a stateless (2026-07-28) request.
	Dial func(ctx context.Context, stateless bool) (transport.Conn, error)
	// Pipeline checks every client message bound for this upstream, and
	// every answer to one (the stages' response halves).
	Pipeline *Pipeline
	// Close, if set, releases what Dial keeps between sessions (the child
	// shared by stateless sessions). Gateway.Close calls it.
	Close func()

	// MaxChildren bounds the live child processes of a stdio upstream, one
	// per stateful HTTP session; 0: no bound. A session over it is refused
	// with HTTP 503 (childAdmission).
	MaxChildren int

	tools *toolIndex // what its tools/list answers said; set by New
	// sessionless: the last initialize answer said the upstream keeps no
	// session (transport.Sessionless); set by New.
	sessionless *atomic.Bool
}

// Options configures a Gateway. The zero value of every field is the safe
// setting.
type Options struct {
	Upstreams []Upstream
	// Default names the upstream served at Path itself; "" with a single
	// upstream means that one.
	Default string
	// Path is where the listener serves MCP; "" means "/mcp".
	Path string

	Limits             jsonrpc.Limits
	RequestTimeout     time.Duration // 0: no bound
	SessionIdleTimeout time.Duration // 0: the listener's default
	// MaxSessions and MaxSessionsPerPrincipal bound the listener's sessions,
	// all upstreams together (transport.SessionLimits; 0: its defaults).
	// BodyTimeout bounds the reading of a request's body (0: the default).
	MaxSessions             int
	MaxSessionsPerPrincipal int
	BodyTimeout             time.Duration

	// AllowedHosts and AllowedOrigins extend the loopback names that the
	// listener's DNS-rebinding protection accepts.
	AllowedHosts   []string
	AllowedOrigins []string
	// InsecureDisableHostCheck turns off the Host and Origin checks. Any web
	// page a user visits can then reach the gateway through DNS rebinding.
	InsecureDisableHostCheck bool

	// Closers are closed by Gateway.Close once every session has ended (the
	// zero-trust replay store, for one).
	Closers []io.Closer
	// Approvals is the queue of calls held for approval, when the
	// configuration holds calls; the CLI serves it on the admin listener.
	Approvals *approval.Queue
	// DataDir is the zero-trust data directory (keys, state, admin token),
	// when zero-trust is configured.
	DataDir string
	// JWKS, if set, serves the public keys of warden's token signing keys at
	// /.well-known/jwks.json, for upstreams that verify tokens themselves.
	JWKS http.Handler
	// AuthorizeURL, when set, is the public URL of the authorization API
	// (AuthorizePath), which DPoP proofs sent to it must name in htu; with
	// ProofStore, where their ids are consumed. Without them the API issues
	// no DPoP-bound tokens.
	AuthorizeURL *url.URL
	ProofStore   store.Store
	// Authorize serves the authorization API at AuthorizePath.
	Authorize bool
	// Metrics, if set, is served at GET /metrics (Prometheus).
	Metrics http.Handler
	// AGUI are AG-UI gateways (internal/aguigw) served at AGUIPath + name.
	AGUI map[string]http.Handler
	// A2A are A2A gateways (internal/a2agw) served at A2APath + name.
	A2A map[string]http.Handler
	// Pinner, when tool pinning is on, is shared with the console (the
	// pins page) and the CLI.
	Pinner *pin.Pinner
	// EndSession, if set, is called when a session with an id ends
	// (DELETE, idle timeout, the upstream's exit): AASM P8 cancels its held
	// calls and revokes its credentials (ZeroTrust.EndSession).
	EndSession func(ctx context.Context, session string) error
	// Introspect, if set, is served at POST IntrospectPath: RFC 7662
	// introspection of the session credentials warden gives upstreams
	// (SessionCredentials).
	Introspect http.Handler
	// Ready, if set, says whether the gateway can serve (its stores answer):
	// /readyz answers 503 with the reason when it returns an error.
	Ready func(context.Context) error
	// Authenticate, if set, authenticates every request to the listener
	// (AASM P1); the principal becomes each call's Principal.
	Authenticate func(*http.Request) (string, *transport.AuthRefusal)
	// ResourceMetadata, if set, is served at
	// /.well-known/oauth-protected-resource (RFC 9728).
	ResourceMetadata http.Handler

	Logger *slog.Logger
	// Observe, if set, sees every decision the gateway makes. It must not
	// block; it is called from relay goroutines.
	Observe func(Decision)
	// Recorder, if set, keeps every decision (the audit log, telemetry)
	// before its message leaves; see Recorder.
	Recorder Recorder
}

// Gateway relays MCP sessions to its upstreams.
type Gateway struct {
	// Immutable after New.
	opts      Options
	upstreams map[string]*Upstream
	listeners map[string]*transport.HTTPServer // by upstream name
	log       *slog.Logger

	// unchecked carries failed re-lists across the requests of the
	// stateless revision, each relayed apart (relay_relist.go).
	unchecked UncheckedLists
	draining  atomic.Bool  // Drain has begun: requests and new sessions are refused
	posts     atomic.Int64 // POSTs the MCP listeners are answering (Drain waits for them)

	mu       sync.Mutex
	sessions sync.WaitGroup                // relays still running; Add only under mu while !closed
	relays   map[*Relay]context.CancelFunc // running relays, and how to end each; guarded by mu
	closed   bool                          // Close has begun: no session starts; guarded by mu
}

// New checks opts and returns a gateway. It starts nothing: serve it with
// Handler or ServeConn. The gateway owns what opts holds open
// (Options.Closers, the upstreams' Close): Close closes it, and so does New
// when it fails.
func New(opts Options) (_ *Gateway, err error) {
	defer func() {
		if err != nil {
			opts.release()
		}
	}()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Path == "" {
		opts.Path = "/mcp"
	}
	if len(opts.Upstreams) == 0 {
		return nil, errors.New("gateway: no upstreams")
	}
	g := &Gateway{
		opts:      opts,
		upstreams: make(map[string]*Upstream, len(opts.Upstreams)),
		listeners: make(map[string]*transport.HTTPServer, len(opts.Upstreams)),
		log:       opts.Logger,
		relays:    make(map[*Relay]context.CancelFunc),
	}
	for i := range opts.Upstreams {
		u := &opts.Upstreams[i]
		if u.Name == "" || u.Dial == nil {
			return nil, fmt.Errorf("gateway: upstream %d needs a name and a dial function", i)
		}
		if _, dup := g.upstreams[u.Name]; dup {
			return nil, fmt.Errorf("gateway: upstream %q defined twice", u.Name)
		}
		if u.Pipeline == nil {
			u.Pipeline = NewPipeline()
		}
		u.tools = newToolIndex()
		u.Pipeline = u.Pipeline.withTools(u.tools) // the index learns each tools/list answer
		u.sessionless = new(atomic.Bool)
		g.upstreams[u.Name] = u
	}
	if g.opts.Default == "" && len(opts.Upstreams) == 1 {
		g.opts.Default = opts.Upstreams[0].Name
	}
	if g.opts.Default != "" && g.upstreams[g.opts.Default] == nil {
		return nil, fmt.Errorf("gateway: default upstream %q is not defined", g.opts.Default)
	}
	sessions := transport.NewSessionLimits(opts.MaxSessions, opts.MaxSessionsPerPrincipal) // shared by the listeners
	for name, u := range g.upstreams {
		g.listeners[name] = g.listener(u, sessions)
	}
	return g, nil
}

// Upstream returns the upstream called name, or nil.
func (g *Gateway) Upstream(name string) *Upstream { return g.upstreams[name] }

// DefaultUpstream returns the name of the upstream served at Path, or "".
func (g *Gateway) DefaultUpstream() string { return g.opts.Default }

// Handler returns the HTTP handler of the MCP listener: the default upstream
// at Path, every upstream at Path/<name>, /healthz, and with zero-trust the
// public signing keys at /.well-known/jwks.json.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	for name, srv := range g.listeners {
		h := g.drained(name, srv)
		mux.Handle(g.opts.Path+"/"+name, h)
		if name == g.opts.Default {
			mux.Handle(g.opts.Path, h)
		}
	}
	if g.opts.JWKS != nil {
		mux.Handle("GET /.well-known/jwks.json", g.opts.JWKS)
	}
	if g.opts.ResourceMetadata != nil {
		mux.Handle("GET /.well-known/oauth-protected-resource", g.opts.ResourceMetadata)
		mux.Handle("GET /.well-known/oauth-protected-resource/", g.opts.ResourceMetadata)
	}
	if g.opts.Metrics != nil {
		mux.Handle("GET /metrics", g.opts.Metrics)
	}
	for name, h := range g.opts.AGUI {
		mux.Handle(AGUIPath+name, g.rebindingGuard(name, h))
	}
	for name, h := range g.opts.A2A {
		h = g.rebindingGuard(name, h) // the same Host and Origin checks as the MCP endpoint
		mux.Handle(A2APath+name, h)
		mux.Handle(A2APath+name+"/", h) // its agent card
	}
	if g.opts.Authorize {
		mux.HandleFunc("POST "+AuthorizePath, g.authorizeHandler)
	}
	if g.opts.Introspect != nil {
		mux.Handle("POST "+IntrospectPath, g.opts.Introspect)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if g.opts.Ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			defer cancel()
			if err := g.opts.Ready(ctx); err != nil {
				g.log.Warn("not ready", "err", err)
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("not ready: " + downStores(err) + "\n"))
				return
			}
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	return mux
}

// listener returns the streamable HTTP listener for one upstream.
func (g *Gateway) listener(u *Upstream, sessions *transport.SessionLimits) *transport.HTTPServer {
	return transport.NewHTTPServer(transport.HTTPServerOptions{
		Limits:                   g.opts.Limits,
		AllowedHosts:             g.opts.AllowedHosts,
		AllowedOrigins:           g.opts.AllowedOrigins,
		InsecureDisableHostCheck: g.opts.InsecureDisableHostCheck,
		SessionIdleTimeout:       g.opts.SessionIdleTimeout,
		Sessions:                 sessions,
		Admit:                    childAdmission(u),
		OnRefuse: func(string) {
			// The refusal is recorded too (OnRefused), and so counted by
			// the Recorder when its metrics are these: not twice.
			if m, ok := g.opts.Metrics.(*Metrics); ok && !g.recorderCounts(m) {
				m.refused(u.Name)
			}
		},
		OnRefused:     g.onRefused(u.Name),
		BodyTimeout:   g.opts.BodyTimeout,
		ParamBindings: u.tools.paramBindings,
		Sessionless:   u.sessionless.Load,
		// An HTTP upstream may keep no session; the client then gets none.
		HoldInitialize: u.Transport == "http",
		Authenticate:   g.opts.Authenticate,
		Logger:         g.log,
		OnSession: func(ctx context.Context, conn transport.Conn, info transport.SessionInfo) {
			if info.Principal != "" {
				ctx = WithPrincipal(ctx, info.Principal)
			}
			if err := g.ServeConn(ctx, conn, u.Name, info.ID, info.Stateless); err != nil {
				g.log.Warn("session ended with an error", "upstream", u.Name, "session", info.ID, "err", err)
			}
		},
	})
}

// ServeConn relays one client connection to a new connection to the named
// upstream until either ends. It is how `warden gateway --stdio` serves its
// single client, and how the listener serves each session.
func (g *Gateway) ServeConn(ctx context.Context, client transport.Conn, upstream, session string, stateless bool) error {
	u := g.upstreams[upstream]
	if u == nil {
		client.Close()
		return fmt.Errorf("gateway: no upstream %q", upstream)
	}
	ctx, end := context.WithCancel(ctx)
	defer end()
	g.mu.Lock()
	if g.closed || g.draining.Load() {
		g.mu.Unlock()
		refuse(ctx, client, shutdownDenial("no new session starts").Error())
		return nil
	}
	g.sessions.Add(1)
	g.mu.Unlock()
	defer g.sessions.Done()

	ctx, scope := newSessionScope(ctx, session)
	up, err := u.Dial(ctx, stateless)
	if err != nil {
		g.log.Error("cannot reach upstream", "upstream", u.Name, "transport", u.Transport, "err", err)
		refuse(ctx, client, jsonrpc.Detail{Stage: "upstream", Rule: string(deny.RuleDial)}.Errorf(jsonrpc.CodeUpstreamUnavailable,
			"upstream "+quote(u.Name)+" is unavailable: "+err.Error()))
		return err
	}
	g.log.Debug("session started", "upstream", u.Name, "session", session, "stateless", stateless)
	var unchecked *UncheckedLists
	if stateless {
		unchecked = &g.unchecked
	}
	relay := NewRelay(client, up, RelayOptions{
		Upstream:       u.Name,
		Session:        session,
		Pipeline:       u.Pipeline,
		RequestTimeout: g.opts.RequestTimeout,
		Observe:        g.opts.Observe,
		Recorder:       g.opts.Recorder,
		Unchecked:      unchecked,
		// Stateless sessions are not exempt from the lifecycle by being
		// stateless: a sessionless POST of an old revision must not skip
		// initialize, unless the upstream itself keeps no session (it
		// answered initialize without one), which then takes each POST on
		// its own. A 2026-07-28 request carries its revision in _meta,
		// which the lifecycle check accepts.
		Stateless:     stateless && u.sessionless.Load(),
		OnInitialized: u.sessionless.Store,
		Principal:     principalFrom(ctx),
		Tools:         u.tools.info(),
		Draining:      g.draining.Load,
		Logger:        g.log,
	})
	g.mu.Lock()
	g.relays[relay] = end
	g.mu.Unlock()
	err = relay.Run(ctx)
	g.mu.Lock()
	delete(g.relays, relay)
	g.mu.Unlock()
	g.log.Debug("session ended", "upstream", u.Name, "session", session)
	// A stateless request has no session to end, unless a session
	// credential was issued for it (SessionCredentials): then its own id.
	if g.opts.EndSession != nil && (session != "" || scope.credential.Load()) {
		if eerr := g.opts.EndSession(context.WithoutCancel(ctx), scope.id); eerr != nil {
			g.log.Warn("session ended, but its held calls or credentials could not be revoked", "session", session, "err", eerr)
		}
	}
	return err
}

// refuse answers the requests a client has already sent on a session whose
// upstream could not be reached, then closes the session.
func refuse(ctx context.Context, client transport.Conn, e *jsonrpc.Error) {
	defer client.Close()
	for {
		rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		msg, err := client.Read(rctx)
		cancel()
		if err != nil {
			return
		}
		if msg.Kind == jsonrpc.KindRequest {
			_ = client.Write(ctx, jsonrpc.NewErrorResponse(msg.ID, e))
		}
	}
}

// Close ends every session (on the listeners, and those served with
// ServeConn) and waits for the relays to finish, the goroutines of their
// held calls included; then it closes the upstreams and Options.Closers
// (the audit log last), so nothing is recorded after the log is closed.
// To let calls in flight finish first, call Drain.
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.closed = true
	for _, end := range g.relays {
		end()
	}
	g.mu.Unlock()
	for _, l := range g.listeners {
		l.Close()
	}
	g.sessions.Wait()
	return g.opts.release()
}

// release closes what the options hold open: the upstreams' Close, then
// Closers in order (the audit log last). New calls it when it refuses the
// options, Gateway.Close when the sessions are over.
func (o *Options) release() error {
	for _, u := range o.Upstreams {
		if u.Close != nil {
			u.Close()
		}
	}
	var errs []error
	for _, c := range o.Closers {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// Routes lists the MCP endpoints a listener at base serves, for the CLI and
// the demo to print.
func (g *Gateway) Routes(base string) []string {
	base = strings.TrimSuffix(base, "/")
	var routes []string
	if g.opts.Default != "" {
		routes = append(routes, base+g.opts.Path+"  → "+g.opts.Default)
	}
	for _, u := range g.opts.Upstreams {
		routes = append(routes, base+g.opts.Path+"/"+u.Name+"  → "+u.Name+" ("+u.Transport+")")
	}
	return routes
}

type principalKey struct{}

// WithPrincipal returns ctx carrying the authenticated principal of the
// session that ServeConn will serve with it.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

func principalFrom(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// rebindingGuard applies the MCP listener's Host and Origin checks (DNS
// rebinding) to another endpoint served next to it.
func (g *Gateway) rebindingGuard(name string, h http.Handler) http.Handler {
	ln := g.listeners[g.anyUpstream()]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rule, msg := ln.CheckRebinding(r); rule != "" {
			e := (&Denial{Stage: "listener", Rule: deny.Rule(rule), Reason: msg}).Error()
			// Audited as the MCP listener's refusals are (record_refused.go).
			g.recordRefused(r.Context(), name, transport.Refusal{Transport: "http", RemoteAddr: r.RemoteAddr,
				Status: http.StatusForbidden, Err: e, Length: r.ContentLength})
			writeAPIError(w, http.StatusForbidden, e)
			return
		}
		h.ServeHTTP(w, r)
	})
}
