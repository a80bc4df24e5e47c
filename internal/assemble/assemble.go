// Package assemble is the builder that turns a validated configuration
// (internal/config) into gateway.Options: it opens the stores, the audit
// log, the exporters and the upstreams' dialers, and orders each
// upstream's stages. Package gateway takes those typed options and never
// sees the configuration.
//
//	config.Config ─► assemble.FromConfig ─► gateway.Options ─► gateway.New
//
// Whatever a build opens is provided to its lifecycle as soon as it is
// open (lifecycle.go): when a later step fails, everything opened so far is
// closed, newest first, and FromConfig returns the error alone.
//
// It also holds what the CLI builds from the configuration besides the
// gateway: the listener's TLS configuration, the console's JWT login, and
// the store checks of warden gateway --check-store.
package assemble

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/policy"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/transport"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// FromConfig turns a validated configuration into gateway Options: one
// upstream per configured server, each with its dial function and its
// pipeline (wire checks happen in the transports; then method-policy with
// the gateway-wide and the upstream's lists; then tool-policy, pins,
// security, classify, taint and the zero-trust stages, each when
// configured).
//
// What it opens (stores, the audit log, exporters, shared stdio children)
// is in Options.Closers and each Upstream.Close, which Gateway.Close
// closes. When it fails, it has closed everything it opened.
func FromConfig(cfg *config.Config, logger *slog.Logger) (_ gateway.Options, err error) {
	var l lifecycle
	defer func() {
		if err != nil {
			err = joinCleanup(err, l.cleanup())
		}
	}()
	return build(cfg, logger, &l)
}

// joinCleanup is the build's error, with what closing the opened parts
// reported when that failed too.
func joinCleanup(err, cerr error) error {
	if cerr == nil {
		return err
	}
	return fmt.Errorf("%w (and closing what was opened: %v)", err, cerr)
}

// build is FromConfig's work: every step provides what it opens to l.
func build(cfg *config.Config, logger *slog.Logger, l *lifecycle) (gateway.Options, error) {
	gc := cfg.Gateway
	limits := jsonrpc.Limits{MaxBytes: gc.Limits.MaxMessageBytes, MaxDepth: gc.Limits.MaxDepth}
	opts := gateway.Options{
		Default:                  gc.DefaultUpstream,
		Path:                     gc.Listen.Path,
		Limits:                   limits,
		RequestTimeout:           gc.Limits.RequestTimeout,
		SessionIdleTimeout:       gc.Limits.SessionIdleTimeout,
		MaxSessions:              gc.Limits.MaxSessions,
		MaxSessionsPerPrincipal:  gc.Limits.MaxSessionsPerPrincipal,
		BodyTimeout:              gc.Limits.BodyTimeout,
		AllowedHosts:             gc.Listen.AllowedHosts,
		AllowedOrigins:           gc.Listen.AllowedOrigins,
		InsecureDisableHostCheck: gc.Listen.InsecureDisableHostCheck,
		Logger:                   logger,
	}
	var err error
	if opts.Authenticate, opts.ResourceMetadata, err = authentication(gc); err != nil {
		return gateway.Options{}, fmt.Errorf("gateway.auth: %w", err)
	}
	var zt gateway.ZeroTrust
	if gc.RequiresTokens() || gc.SessionCredentials() {
		var closer io.Closer
		if zt, closer, opts.DataDir, err = zeroTrustStage(gc.ZeroTrust, gc.Admin.Approvers, l); err != nil {
			return gateway.Options{}, fmt.Errorf("gateway.zero_trust: %w", err)
		}
		opts.Closers = append(opts.Closers, closer)
		if zt.AdminApproval {
			opts.Approvals = zt.Approvals // served on the admin listener
		}
		if ring, ok := zt.Keys.(*zerotrust.KeyRing); ok {
			opts.JWKS = ring.JWKSHandler()
		}
		if gc.RequiresTokens() {
			opts.Authorize = true
			opts.AuthorizeURL = gateway.AuthorizeEndpoint(publicBase(gc))
			opts.ProofStore = zt.Store
		}
		opts.EndSession = zt.EndSession
		if gc.SessionCredentials() {
			opts.Introspect = gateway.IntrospectionHandler(zt.Keys, publicBase(gc), zt.Revocations)
		}
	}
	var classify *gateway.Classify
	if len(gc.ZeroTrust.Classification) > 0 {
		c, err := policy.NewClassifier(gc.ZeroTrust.PolicyRules())
		if err != nil {
			return gateway.Options{}, fmt.Errorf("gateway.zero_trust.classification: %w", err)
		}
		classify = &gateway.Classify{Classifier: c, Subject: zt.Subject}
	}
	var pins *gateway.Pins
	var pinStore io.Closer // the pin store, for readiness
	if gc.Pinning.Enabled {
		p, closer, err := pinner(gc, logger, l)
		if err != nil {
			return gateway.Options{}, fmt.Errorf("gateway.pinning: %w", err)
		}
		opts.Closers = append(opts.Closers, closer)
		opts.Pinner = p
		pins = &gateway.Pins{Pinner: p, Log: logger}
		pinStore = closer
	}
	var security *gateway.Security
	if gc.Security.Enabled {
		proc, err := securityProcessor(gc)
		if err != nil {
			return gateway.Options{}, err
		}
		security = &gateway.Security{Processor: proc, CanHold: gc.RequiresTokens() && zt.MayBlock(),
			Subject: gateway.SubjectOf(gc.ZeroTrust.Subject), Quarantine: gc.Security.Quarantined}
	}
	taintStage := taintFrom(gc, gc.RequiresTokens() && zt.MayBlock())
	for _, u := range gc.Upstreams {
		up, err := upstream(gc, u, limits, upstreamStages{zt: zt, pins: pins, security: security, classify: classify, taint: taintStage}, logger, l)
		if err != nil {
			return gateway.Options{}, fmt.Errorf("upstream %q: %w", u.Name, err)
		}
		opts.Upstreams = append(opts.Upstreams, up)
	}
	rs, closers, err := records(cfg, logger, l)
	if err != nil {
		return gateway.Options{}, err
	}
	var auditLog any // the audit log, for readiness: a lost file makes warden not ready
	if rs != nil {
		opts.Recorder = rs
		opts.Closers = append(opts.Closers, closers...)
		if rs.Metrics != nil {
			opts.Metrics = rs.Metrics
		}
		if rs.Audit != nil {
			auditLog = rs.Audit
		}
	}
	opts.Ready = gateway.Readiness(
		gateway.NamedStore{Name: "replay store", Store: zt.Store},
		gateway.NamedStore{Name: "revocation registry", Store: zt.Revocations},
		gateway.NamedStore{Name: "pin store", Store: pinStore},
		gateway.NamedStore{Name: "audit log", Store: auditLog})
	// A2A consent and taint: held on the admin approval queue when there is
	// one, refused otherwise.
	var queue *approval.Queue
	if zt.MayBlock() && zt.AdminApproval {
		queue = zt.Approvals
	}
	flow := func(a config.A2AUpstream) a2agw.Flow {
		if taintStage == nil && len(a.RequireApproval) == 0 {
			return nil
		}
		return gateway.NewA2AFlow(taintStage, a.RequireApproval, a.Name, queue, logger)
	}
	var cardPins io.Closer
	if opts.A2A, cardPins, err = a2aHandlers(gc, opts.Authenticate, rs, flow, logger, l); err != nil {
		return gateway.Options{}, err
	}
	if cardPins != nil {
		opts.Closers = append(opts.Closers, cardPins)
	}
	if opts.AGUI, err = aguiHandlers(gc, opts.Authenticate, rs, logger); err != nil {
		return gateway.Options{}, err
	}
	return opts, nil
}

// upstreamStages are the stages every upstream may share, each nil (or
// zero) when it is not configured.
type upstreamStages struct {
	zt       gateway.ZeroTrust
	pins     *gateway.Pins
	security *gateway.Security
	classify *gateway.Classify
	taint    *gateway.Taint
}

// upstream builds the gateway's upstream u: its pipeline, in stage order,
// and its dialer, whose shared state it provides to l.
func upstream(gc config.GatewayConfig, u config.Upstream, limits jsonrpc.Limits, s upstreamStages, logger *slog.Logger, l *lifecycle) (gateway.Upstream, error) {
	stages := []gateway.Stage{
		gateway.MethodPolicy{Lists: []gateway.Permitter{gc.Methods, u.Methods}},
		gateway.NewToolPolicy(toolLists(u)),
	}
	if s.pins != nil {
		stages = append(stages, *s.pins)
	}
	if s.security != nil {
		stages = append(stages, *s.security)
	}
	if s.classify != nil {
		stages = append(stages, *s.classify)
	}
	if s.taint != nil {
		stages = append(stages, *s.taint) // after classify: it needs the call's tier
	}
	if s.classify != nil || len(u.RequireToken.Allow) > 0 || len(u.RequireSignature.Allow) > 0 ||
		(s.security != nil && s.security.CanHold) || (s.taint != nil && s.taint.CanHold) {
		z := s.zt
		z.Requires = gateway.RequireList(u.RequireToken)
		if len(u.RequireToken.Allow) == 0 {
			z.Requires = gateway.PermitNone() // only classified calls need a token
		}
		if len(u.RequireSignature.Allow) > 0 {
			z.Signatures = gateway.RequireList(u.RequireSignature)
		}
		if len(u.Mandates) > 0 {
			z.Mandates = map[string]bool{}
			for i, m := range u.Mandates {
				hash, _, err := zerotrust.ParamsHash([]byte(m.Arguments))
				if err != nil {
					return gateway.Upstream{}, fmt.Errorf("mandates[%d].arguments: %v", i, err)
				}
				z.Mandates[gateway.MandateKey(m.Tool, hash)] = true
			}
		}
		z.URLs = upstreamURLs(gc, u.Name)
		stages = append(stages, z)
	}
	var creds *gateway.SessionCredentials
	if sc := u.SessionCredential; sc != nil {
		creds = &gateway.SessionCredentials{Ring: s.zt.Signer, Issuer: publicBase(gc), Audience: u.URL,
			Header: sc.Header, TTL: sc.TTL, Subject: gc.ZeroTrust.Subject}
	}
	dial, closeFn, err := dialer(u, limits, creds, logger)
	if err != nil {
		return gateway.Upstream{}, err
	}
	l.provideFunc(closeFn)
	up := gateway.Upstream{
		Name:      u.Name,
		Transport: u.Transport(),
		Dial:      dial,
		Close:     closeFn,
		Pipeline:  gateway.NewPipeline(stages...),
	}
	if u.Transport() == config.TransportStdio {
		up.MaxChildren = gc.Limits.MaxChildrenPerUpstream
	}
	return up, nil
}

// toolLists is what u says about its tools.
func toolLists(u config.Upstream) gateway.ToolLists {
	l := gateway.ToolLists{Tools: u.Tools, RequireToken: u.RequireToken, RequireSignature: u.RequireSignature}
	for _, m := range u.Mandates {
		l.Mandated = append(l.Mandated, m.Tool)
	}
	return l
}

// securityProcessor is gateway.security's processor.
func securityProcessor(gc config.GatewayConfig) (*secproc.Processor, error) {
	sc, err := gc.Security.Processor()
	if err != nil {
		return nil, fmt.Errorf("gateway.security: %w", err)
	}
	proc, err := secproc.New(sc)
	if err != nil {
		return nil, fmt.Errorf("gateway.security: %w", err)
	}
	return proc, nil
}

// zeroTrustStage opens the key ring, the replay store, the revocation
// registry and (with hold_for_approval) the approval queue of the
// zero-trust configuration z, providing each to l, and returns the stage
// (without its tool lists), what to close when the gateway stops, and the
// data directory.
func zeroTrustStage(z config.ZeroTrustConfig, approvers map[int]int, l *lifecycle) (gateway.ZeroTrust, io.Closer, string, error) {
	dir := z.DataDir
	if dir == "" {
		dir = zerotrust.DefaultDataDir()
	}
	if dir == "" {
		return gateway.ZeroTrust{}, nil, "", fmt.Errorf("no data directory: set data_dir or WARDEN_DATA_DIR")
	}
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dir))
	if err != nil {
		return gateway.ZeroTrust{}, nil, "", err
	}
	if len(ring.Keys()) == 0 {
		return gateway.ZeroTrust{}, nil, "", fmt.Errorf("no signing key in %s: run warden keys generate --data-dir %s", zerotrust.KeysDir(dir), dir)
	}
	st, err := openStore(z, dir)
	if err != nil {
		return gateway.ZeroTrust{}, nil, "", fmt.Errorf("replay store: %w", err)
	}
	l.provide(st)
	pinned := map[string][]jose.JSONWebKey{}
	for sub, path := range z.ClientKeys {
		k, err := zerotrust.LoadPublicJWK(path)
		if err != nil {
			return gateway.ZeroTrust{}, nil, "", fmt.Errorf("client_keys.%s: %w", sub, err)
		}
		pinned[sub] = append(pinned[sub], k)
	}
	stage := gateway.ZeroTrust{
		ClientKeys: func(sub string) []jose.JSONWebKey { return pinned[sub] },
		Keys:       ring, Store: st,
		Subject:  gateway.SubjectOf(z.Subject),
		Audience: z.Audience, Issuer: z.Issuer, Skew: z.Skew,
		RequireDPoP: z.RequireDPoP, Persona: z.Persona,
		StoreTimeout: z.StoreTimeout,
	}
	stage.Signer = ring // issues tokens for mandates and approved calls
	// Revocations and approvals follow the replay store (stores.go).
	reg, err := openRevocations(z, dir)
	if err != nil {
		return gateway.ZeroTrust{}, nil, "", fmt.Errorf("revocation registry: %w", err)
	}
	l.provide(reg)
	stage.Revocations = reg
	closer := closeAll{reg, st}
	if z.HoldForApproval {
		q, err := openApprovals(z, dir, approvers, reg, nil)
		if err != nil {
			return gateway.ZeroTrust{}, nil, "", fmt.Errorf("approval queue: %w", err)
		}
		l.provide(q)
		closer = append(closeAll{q}, closer...)
		stage.Approvals = q
		stage.AdminApproval = z.Channel(config.ApprovalAdmin)
		stage.ElicitApproval = z.Channel(config.ApprovalElicitation)
	}
	return stage, closer, dir, nil
}

// upstreamURLs returns the URLs by which clients reach upstream name on the
// listener, for the htu of DPoP proofs: <public>/<path>/<name>, and
// <public>/<path> when it is the default upstream. The base comes from the
// configuration, never from a request's Host header.
func upstreamURLs(gc config.GatewayConfig, name string) func(*gateway.Call) []*url.URL {
	base := publicBase(gc)
	var urls []*url.URL
	for _, s := range []string{base + gc.Listen.Path + "/" + name, base + gc.Listen.Path} {
		if s == base+gc.Listen.Path && gc.DefaultUpstreamName() != name {
			continue
		}
		if u, err := url.Parse(s); err == nil {
			urls = append(urls, u)
		}
	}
	return func(*gateway.Call) []*url.URL { return urls }
}

// publicBase is the scheme and host by which clients reach the listener:
// zero_trust.public_url, else http://<listen.addr>.
func publicBase(gc config.GatewayConfig) string {
	base := gc.ZeroTrust.PublicURL
	if base == "" && gc.Listen.TLS.Enabled() {
		base = "https://" + gc.Listen.Addr
	} else if base == "" {
		base = "http://" + gc.Listen.Addr
	}
	return strings.TrimSuffix(base, "/")
}

// dialer returns the function that opens a session's connection to u, and
// the function that releases what it keeps between sessions. A stdio
// upstream serves stateful sessions with a child each, and all stateless
// sessions with one shared child. Secrets referenced as ${env:NAME} are
// resolved here, at start, not when the file is parsed. With creds, each
// HTTP session sends its own session credential.
func dialer(u config.Upstream, limits jsonrpc.Limits, creds *gateway.SessionCredentials, logger *slog.Logger) (gateway.Dial, func(), error) {
	switch u.Transport() {
	case config.TransportStdio:
		env, err := u.ResolvedEnv(os.LookupEnv)
		if err != nil {
			return nil, nil, err
		}
		spec := transport.CommandSpec{
			Path: u.Command[0], Args: u.Command[1:], Dir: u.Dir,
			Env: env, PassEnv: u.PassEnv,
			Limits: limits, Logger: logger, Name: u.Name,
			ShutdownTimeout: u.ShutdownTimeout,
		}
		dial, stop := gateway.StdioDialer(u.Name, func(context.Context) (transport.Conn, error) { return transport.Command(spec) }, logger)
		return dial, stop, nil
	case config.TransportHTTP:
		headers, err := u.ResolvedHeaders(os.LookupEnv)
		if err != nil {
			return nil, nil, err
		}
		h := http.Header{}
		for k, v := range headers {
			h.Set(k, v)
		}
		client := transport.UpstreamHTTPClient() // one keep-alive pool for all of u's sessions
		dial := gateway.HTTPDialer(transport.HTTPClientOptions{
			URL: u.URL, Client: client, Header: h, Limits: limits, Logger: logger, Name: u.Name,
		}, creds)
		return dial, client.CloseIdleConnections, nil // after the last session: nothing keeps the pool's connections open
	}
	return nil, nil, fmt.Errorf("unknown transport %q", u.Transport())
}
