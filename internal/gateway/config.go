package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/pin"
	"github.com/agentwarden/warden/internal/policy"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/transport"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// FromConfig turns a validated configuration into gateway Options: one
// upstream per configured server, each with its dial function and its
// pipeline (wire checks happen in the transports; then method-policy with the
// gateway-wide and the upstream's lists; then tool-policy).
//
// What it opens (stores, the audit log, exporters) is in Options.Closers,
// which Gateway.Close closes; when it fails, it closes what it opened
// itself.
func FromConfig(cfg *config.Config, logger *slog.Logger) (_ Options, err error) {
	gc := cfg.Gateway
	limits := jsonrpc.Limits{MaxBytes: gc.Limits.MaxMessageBytes, MaxDepth: gc.Limits.MaxDepth}
	opts := Options{
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
	defer func() {
		if err != nil {
			opts.release()
		}
	}()
	if opts.Authenticate, opts.ResourceMetadata, err = authentication(gc); err != nil {
		return Options{}, fmt.Errorf("gateway.auth: %w", err)
	}
	var zt ZeroTrust
	if gc.RequiresTokens() || gc.SessionCredentials() {
		var closer io.Closer
		var err error
		if zt, closer, opts.DataDir, err = zeroTrustStage(gc.ZeroTrust, gc.Admin.Approvers); err != nil {
			return Options{}, fmt.Errorf("gateway.zero_trust: %w", err)
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
			opts.AuthorizeURL = authorizeURL(publicBase(gc))
			opts.ProofStore = zt.Store
		}
		opts.EndSession = zt.EndSession
		if gc.SessionCredentials() {
			opts.Introspect = introspectionHandler(zt.Keys, publicBase(gc), zt.Revocations)
		}
	}
	var classify *Classify
	if len(gc.ZeroTrust.Classification) > 0 {
		c, err := policy.NewClassifier(gc.ZeroTrust.PolicyRules())
		if err != nil {
			return Options{}, fmt.Errorf("gateway.zero_trust.classification: %w", err)
		}
		classify = &Classify{Classifier: c, Subject: zt.Subject}
	}
	var pins *Pins
	var pinStore io.Closer // the pin store, for readiness
	if gc.Pinning.Enabled {
		p, closer, err := pinner(gc, logger)
		if err != nil {
			return Options{}, fmt.Errorf("gateway.pinning: %w", err)
		}
		opts.Closers = append(opts.Closers, closer)
		opts.Pinner = p
		pins = &Pins{Pinner: p, Log: logger}
		pinStore = closer
	}
	var security *Security
	if gc.Security.Enabled {
		sc, err := gc.Security.Processor()
		if err != nil {
			return Options{}, fmt.Errorf("gateway.security: %w", err)
		}
		proc, err := secproc.New(sc)
		if err != nil {
			return Options{}, fmt.Errorf("gateway.security: %w", err)
		}
		security = &Security{Processor: proc, CanHold: gc.RequiresTokens() && zt.MayBlock(),
			Subject: subjectOf(gc.ZeroTrust.Subject), Quarantine: gc.Security.Quarantined}
	}
	taintStage := taintFrom(gc, gc.RequiresTokens() && zt.MayBlock())
	for _, u := range gc.Upstreams {
		stages := []Stage{
			MethodPolicy{Lists: []Permitter{gc.Methods, u.Methods}},
			NewToolPolicy(u),
		}
		if pins != nil {
			stages = append(stages, *pins)
		}
		if security != nil {
			stages = append(stages, *security)
		}
		if classify != nil {
			stages = append(stages, *classify)
		}
		if taintStage != nil {
			stages = append(stages, *taintStage) // after classify: it needs the call's tier
		}
		if classify != nil || len(u.RequireToken.Allow) > 0 || len(u.RequireSignature.Allow) > 0 ||
			(security != nil && security.CanHold) || (taintStage != nil && taintStage.CanHold) {
			z := zt
			z.Requires = newAnyForm(u.RequireToken)
			if len(u.RequireToken.Allow) == 0 {
				z.Requires = permitNone{} // only classified calls need a token
			}
			if len(u.RequireSignature.Allow) > 0 {
				z.Signatures = newAnyForm(u.RequireSignature)
			}
			if len(u.Mandates) > 0 {
				z.Mandates = map[string]bool{}
				for i, m := range u.Mandates {
					hash, _, err := zerotrust.ParamsHash([]byte(m.Arguments))
					if err != nil {
						return Options{}, fmt.Errorf("upstream %q: mandates[%d].arguments: %v", u.Name, i, err)
					}
					z.Mandates[MandateKey(m.Tool, hash)] = true
				}
			}
			z.URLs = upstreamURLs(gc, u.Name)
			stages = append(stages, z)
		}
		var creds *SessionCredentials
		if sc := u.SessionCredential; sc != nil {
			creds = &SessionCredentials{Ring: zt.Signer, Issuer: publicBase(gc), Audience: u.URL,
				Header: sc.Header, TTL: sc.TTL, Subject: gc.ZeroTrust.Subject}
		}
		dial, closeFn, err := dialer(u, limits, creds, logger)
		if err != nil {
			return Options{}, fmt.Errorf("upstream %q: %w", u.Name, err)
		}
		up := Upstream{
			Name:      u.Name,
			Transport: u.Transport(),
			Dial:      dial,
			Close:     closeFn,
			Pipeline:  NewPipeline(stages...),
		}
		if u.Transport() == config.TransportStdio {
			up.MaxChildren = gc.Limits.MaxChildrenPerUpstream
		}
		opts.Upstreams = append(opts.Upstreams, up)
	}
	rs, closers, err := records(cfg, logger)
	if err != nil {
		return Options{}, err
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
	opts.Ready = readiness(
		namedStore{"replay store", zt.Store},
		namedStore{"revocation registry", zt.Revocations},
		namedStore{"pin store", pinStore},
		namedStore{"audit log", auditLog})
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
		return newA2AFlow(taintStage, a.RequireApproval, a.Name, queue, logger)
	}
	var cardPins io.Closer
	if opts.A2A, cardPins, err = a2aHandlers(gc, opts.Authenticate, rs, flow, logger); err != nil {
		return Options{}, err
	}
	if cardPins != nil {
		opts.Closers = append(opts.Closers, cardPins)
	}
	specs := make([]AGUISpec, len(gc.AGUI))
	for i, a := range gc.AGUI {
		if a.Headers, err = a.ResolvedHeaders(os.LookupEnv); err != nil {
			return Options{}, fmt.Errorf("gateway.agui[%d]: %w", i, err)
		}
		specs[i] = AGUISpec(a)
	}
	if opts.AGUI, err = AGUIHandlers(gc, specs, opts.Authenticate, rs, logger); err != nil {
		return Options{}, err
	}
	return opts, nil
}

// zeroTrustStage opens the key ring and the replay store of the zero-trust
// configuration z, and returns the stage (without its tool list) and the
// store to close when the gateway stops.
func zeroTrustStage(z config.ZeroTrustConfig, approvers map[int]int) (ZeroTrust, io.Closer, string, error) {
	dir := z.DataDir
	if dir == "" {
		dir = zerotrust.DefaultDataDir()
	}
	if dir == "" {
		return ZeroTrust{}, nil, "", errors.New("no data directory: set data_dir or WARDEN_DATA_DIR")
	}
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dir))
	if err != nil {
		return ZeroTrust{}, nil, "", err
	}
	if len(ring.Keys()) == 0 {
		return ZeroTrust{}, nil, "", fmt.Errorf("no signing key in %s: run warden keys generate --data-dir %s", zerotrust.KeysDir(dir), dir)
	}
	st, err := openStore(z, dir)
	if err != nil {
		return ZeroTrust{}, nil, "", fmt.Errorf("replay store: %w", err)
	}
	pinned := map[string][]jose.JSONWebKey{}
	for sub, path := range z.ClientKeys {
		k, err := zerotrust.LoadPublicJWK(path)
		if err != nil {
			st.Close()
			return ZeroTrust{}, nil, "", fmt.Errorf("client_keys.%s: %w", sub, err)
		}
		pinned[sub] = append(pinned[sub], k)
	}
	subject := z.Subject
	stage := ZeroTrust{
		ClientKeys: func(sub string) []jose.JSONWebKey { return pinned[sub] },
		Keys:       ring, Store: st,
		Subject:  subjectOf(subject),
		Audience: z.Audience, Issuer: z.Issuer, Skew: z.Skew,
		RequireDPoP: z.RequireDPoP, Persona: z.Persona,
		StoreTimeout: z.StoreTimeout,
	}
	stage.Signer = ring // issues tokens for mandates and approved calls
	// Revocations and approvals follow the replay store (config_scale.go).
	reg, err := openRevocations(z, dir)
	if err != nil {
		st.Close()
		return ZeroTrust{}, nil, "", fmt.Errorf("revocation registry: %w", err)
	}
	stage.Revocations = reg
	closer := closeAll{reg, st}
	if z.HoldForApproval {
		q, err := openApprovals(z, dir, approvers, reg, nil)
		if err != nil {
			closer.Close()
			return ZeroTrust{}, nil, "", fmt.Errorf("approval queue: %w", err)
		}
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
func upstreamURLs(gc config.GatewayConfig, name string) func(*Call) []*url.URL {
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
	return func(*Call) []*url.URL { return urls }
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
// the function that releases what it keeps between sessions (nil if none).
// A stdio upstream serves stateful sessions with a child each, and all
// stateless sessions with one shared child. Secrets referenced as
// ${env:NAME} are resolved here, at start, not when the file is parsed.
// With creds, each HTTP session sends its own session credential.
func dialer(u config.Upstream, limits jsonrpc.Limits, creds *SessionCredentials, logger *slog.Logger) (func(context.Context, bool) (transport.Conn, error), func(), error) {
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
		start := func(context.Context) (transport.Conn, error) { return transport.Command(spec) }
		shared := newSharedUpstream(u.Name, start, logger)
		return func(ctx context.Context, stateless bool) (transport.Conn, error) {
			if stateless {
				return shared.session(), nil
			}
			return start(ctx)
		}, shared.Close, nil
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
		return func(ctx context.Context, _ bool) (transport.Conn, error) {
			o := transport.HTTPClientOptions{
				URL: u.URL, Client: client, Header: h.Clone(), Limits: limits, Logger: logger, Name: u.Name,
			}
			if creds != nil {
				o.Credential = creds.forSession(scopeFrom(ctx), principalFrom(ctx))
			}
			return transport.NewHTTPClient(o), nil
		}, client.CloseIdleConnections, nil // after the last session: nothing keeps the pool's connections open
	}
	return nil, nil, fmt.Errorf("unknown transport %q", u.Transport())
}

// subjectOf returns the principal a call acts for: its session's
// authenticated client (gateway.auth), else the configured subject (stdio,
// or a listener without authentication).
func subjectOf(configured string) func(*Call) (string, bool) {
	return func(c *Call) (string, bool) {
		if c.Principal != "" {
			return c.Principal, true
		}
		return configured, configured != ""
	}
}

// openStore opens the replay store of z; dir is the data directory.
func openStore(z config.ZeroTrustConfig, dir string) (store.Store, error) {
	switch z.Store {
	case config.StoreMemory:
		return store.NewMemory(), nil
	case config.StoreRedis:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return store.OpenRedis(ctx, z.RedisURL)
	default:
		path := z.StorePath
		if path == "" {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, err
			}
			path = filepath.Join(dir, "state.db")
		}
		return store.OpenSQLite(path)
	}
}

// StoreReport is what CheckStore found.
type StoreReport struct {
	Kind  string    // sqlite, memory or redis
	Where string    // the file or the URL without credentials
	Epoch time.Time // the store's epoch (tokens issued before it are refused)
}

// CheckStore opens the replay store that z configures, proves it can
// consume (an id of its own, in a namespace no credential uses, expiring at
// once) and reports its epoch: warden gateway --check-store.
func CheckStore(ctx context.Context, z config.ZeroTrustConfig) (StoreReport, error) {
	dir := z.DataDir
	if dir == "" {
		dir = zerotrust.DefaultDataDir()
	}
	rep := StoreReport{Kind: z.Store}
	switch z.Store {
	case config.StoreRedis:
		if u, err := url.Parse(z.RedisURL); err == nil {
			u.User = nil
			rep.Where = u.String()
		}
	case config.StoreSQLite:
		rep.Where = z.StorePath
		if rep.Where == "" {
			rep.Where = filepath.Join(dir, "state.db")
		}
	}
	st, err := openStore(z, dir)
	if err != nil {
		return rep, err
	}
	defer st.Close()
	if p, ok := st.(store.Pinger); ok {
		if err := p.Ping(ctx); err != nil {
			return rep, err
		}
	}
	if es, ok := st.(store.EpochStore); ok {
		ok, epoch, err := es.ConsumeSince(ctx, "check", rand.Text(), time.Now().Add(time.Second))
		if err != nil {
			return rep, err
		}
		if !ok {
			return rep, errors.New("a fresh id was reported as used: the store is not consuming correctly")
		}
		rep.Epoch = epoch
	}
	return rep, nil
}

// CheckPinStore opens the pin store of gc and proves it answers, when the
// pins live in Redis: warden gateway --check-store. It reports Kind "" and
// checks nothing when pinning is off or the pins are in SQLite or memory
// (a file opened at start, or nothing to reach).
func CheckPinStore(ctx context.Context, gc config.GatewayConfig) (StoreReport, error) {
	if !gc.Pinning.Enabled || gc.PinStore() != config.StoreRedis {
		return StoreReport{}, nil
	}
	rep := StoreReport{Kind: config.StoreRedis}
	if u, err := url.Parse(gc.ZeroTrust.RedisURL); err == nil {
		u.User = nil
		rep.Where = u.String()
	}
	st, err := pin.OpenRedis(ctx, gc.ZeroTrust.RedisURL) // pings and subscribes
	if err != nil {
		return rep, err
	}
	defer st.Close()
	return rep, st.Ping(ctx)
}

// namedStore is a store /readyz checks, by the name its failure carries.
type namedStore struct {
	name  string
	store any // checked when it is a store.Pinger; nil or not, it is skipped
}

// readiness reports whether the gateway can serve calls that need its
// stores: every one of stores that can be pinged answers (the replay store,
// the revocation registry in Redis, the pin store in Redis, and the audit
// log, whose file must still be where it was opened: audit.Log.Ping). They are
// pinged at once, so one that hangs does not use the others' time, and
// every failure is reported, each named. It returns nil when none can be
// pinged (the gateway keeps no state a probe could miss).
//
// The approval queue is not pinged: approval.Queue does not expose its
// backend. With store redis it is on the same redis_url as the replay
// store and the revocation registry, whose pings cover that server.
func readiness(stores ...namedStore) func(context.Context) error {
	var names []string
	var pingers []store.Pinger
	for _, s := range stores {
		if p, ok := s.store.(store.Pinger); ok {
			names, pingers = append(names, s.name), append(pingers, p)
		}
	}
	if len(pingers) == 0 {
		return nil
	}
	return func(ctx context.Context) error {
		errs := make([]error, len(pingers))
		var wg sync.WaitGroup
		for i, p := range pingers {
			wg.Go(func() {
				if err := p.Ping(ctx); err != nil {
					errs[i] = &storeDown{name: names[i], err: err}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
}

// storeDown is a store that did not answer its readiness ping.
type storeDown struct {
	name string
	err  error
}

func (e *storeDown) Error() string { return e.name + ": " + e.err.Error() }
func (e *storeDown) Unwrap() error { return e.err }

// downStores names the stores in a readiness error, without their errors:
// what /readyz tells anyone who asks, since a store's error may carry an
// internal address (a Redis host and port). The log has the whole error.
func downStores(err error) string {
	var names []string
	var walk func(error)
	walk = func(err error) {
		if d, ok := err.(*storeDown); ok {
			state := "not answering"
			if errors.Is(d.err, audit.ErrLost) {
				state = "lost" // its file was deleted or replaced (docs/audit.md)
			}
			names = append(names, d.name+": "+state)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	if len(names) == 0 {
		return "a store does not answer"
	}
	return strings.Join(names, "; ")
}

// pinner opens the pin store and the signed manifests of gc.Pinning. A
// manifest that does not verify stops the gateway from starting. With the
// zero-trust state in Redis the pins are there too (gc.PinStore), so that a
// tool pinned, held or approved through one gateway is so on all of them.
func pinner(gc config.GatewayConfig, logger *slog.Logger) (*pin.Pinner, io.Closer, error) {
	pc := gc.Pinning
	var st pin.Store
	switch gc.PinStore() {
	case config.StoreMemory:
		st = pin.NewMemory()
	case config.StoreRedis:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := pin.OpenRedis(ctx, gc.ZeroTrust.RedisURL)
		if err != nil {
			return nil, nil, err
		}
		st = s
	default:
		path, err := pinStorePath(gc)
		if err != nil {
			return nil, nil, err
		}
		s, err := pin.OpenSQLite(path)
		if err != nil {
			return nil, nil, err
		}
		st = s
	}
	var manifests []*pin.Manifest
	for i, mc := range pc.Manifests {
		var keys []ed25519.PublicKey
		for _, kp := range mc.Keys {
			k, err := pin.LoadPublicKey(kp)
			if err != nil {
				st.Close()
				return nil, nil, fmt.Errorf("manifests[%d].keys: %w", i, err)
			}
			keys = append(keys, k)
		}
		m, err := pin.LoadManifest(mc.File, keys)
		if err != nil {
			st.Close()
			return nil, nil, fmt.Errorf("manifests[%d]: %w", i, err)
		}
		manifests = append(manifests, m)
	}
	firstUse := pin.FirstUsePin
	if pc.FirstUse == string(pin.FirstUseHold) {
		firstUse = pin.FirstUseHold
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := pin.New(ctx, pin.Options{Store: st, FirstUse: firstUse, Manifests: manifests, Logger: logger})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return p, st, nil
}

// pinStorePath is the SQLite file of the pins (tool and agent card pins
// share it): gateway.pinning.store_path, or pins.db in the data directory,
// which it creates.
func pinStorePath(gc config.GatewayConfig) (string, error) {
	if gc.Pinning.StorePath != "" {
		return gc.Pinning.StorePath, nil
	}
	dir := gc.ZeroTrust.DataDir
	if dir == "" {
		dir = zerotrust.DefaultDataDir()
	}
	if dir == "" {
		return "", errors.New("no store_path and no data directory: set store_path, zero_trust.data_dir or WARDEN_DATA_DIR")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return filepath.Join(dir, "pins.db"), nil
}
