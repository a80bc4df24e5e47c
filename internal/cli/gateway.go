package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/assemble"
	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/console"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/transport"
)

// gatewayFlags are the flags of `warden gateway`.
type gatewayFlags struct {
	configPath string
	listen     string
	stdio      bool
	checkStore bool
	logLevel   string
	logFormat  string

	// --stdio only
	name        string
	env         listFlag
	passEnv     listFlag
	allowTools  listFlag
	denyTools   listFlag
	allowMethod listFlag
	denyMethod  listFlag
	requireTok  listFlag
}

func runGateway(ctx context.Context, env *Env, args []string) (int, error) {
	var f gatewayFlags
	fs := newFlags(env, "gateway", "[--config FILE] [--listen ADDR] | --stdio [flags] -- CMD [ARGS...]")
	fs.StringVar(&f.configPath, "config", "", "configuration `file` (see docs/config.md)")
	fs.StringVar(&f.listen, "listen", "", "listener `address`, overriding the configuration's gateway.listen.addr")
	fs.BoolVar(&f.stdio, "stdio", false, "serve one MCP client on stdin/stdout, relaying to the command after --")
	fs.BoolVar(&f.checkStore, "check-store", false, "with --config: check that the zero-trust replay store answers and consumes (and the pin store answers, when in Redis), print its epoch, and exit")
	fs.StringVar(&f.logLevel, "log-level", "", "log level: debug, info, warn or error (default from the configuration, else info)")
	fs.StringVar(&f.logFormat, "log-format", "", "log format: text or json (default from the configuration, else text)")
	fs.StringVar(&f.name, "name", "stdio", "with --stdio: the upstream's `name` in logs and refusals")
	fs.Var(&f.env, "env", "with --stdio: set `KEY=VALUE` in the server's environment (repeatable)")
	fs.Var(&f.passEnv, "pass-env", "with --stdio: pass warden's own environment variable `NAME` to the server (repeatable)")
	fs.Var(&f.allowTools, "allow-tool", "with --stdio: allow only tools matching `PATTERN` (repeatable; * matches anything)")
	fs.Var(&f.denyTools, "deny-tool", "with --stdio: refuse tools matching `PATTERN` (repeatable)")
	fs.Var(&f.allowMethod, "allow-method", "with --stdio: allow only methods matching `PATTERN` (repeatable)")
	fs.Var(&f.denyMethod, "deny-method", "with --stdio: refuse methods matching `PATTERN` (repeatable)")
	fs.Var(&f.requireTok, "require-token", "with --stdio and --config: calls to tools matching `PATTERN` need a zero-trust token in params._meta (repeatable)")
	if code, err := parseFlags(fs, args); err != nil {
		return code, err
	}

	switch {
	case f.stdio && fs.NArg() == 0:
		return ExitUsage, errors.New("--stdio needs the server command after --, e.g. warden gateway --stdio -- npx -y @modelcontextprotocol/server-everything")
	case !f.stdio && fs.NArg() > 0:
		return ExitUsage, fmt.Errorf("unexpected arguments %q (a server command needs --stdio)", fs.Args())
	case !f.stdio && f.configPath == "":
		return ExitUsage, errors.New("need --config FILE, or --stdio -- CMD (see warden help gateway)")
	}

	cfg := config.Default()
	if f.configPath != "" {
		// With --stdio the file is validated once the command has taken
		// the place of its upstreams, so it needs none of its own.
		read := config.Load
		if f.stdio {
			read = config.Read
		}
		var err error
		if cfg, err = read(f.configPath); err != nil {
			fmt.Fprintln(env.Stderr, err)
			return ExitConfig, fmt.Errorf("invalid configuration %s", f.configPath)
		}
	}
	if f.stdio {
		if code, err := stdioUpstream(env, cfg, &f, fs.Args()); err != nil {
			return code, err
		}
	}
	logger, err := newLogger(env.Stderr, firstNonEmpty(f.logLevel, cfg.Log.Level), firstNonEmpty(f.logFormat, cfg.Log.Format))
	if err != nil {
		return ExitUsage, err
	}

	if f.checkStore {
		return checkStore(ctx, env, cfg)
	}
	if f.stdio {
		return serveStdio(ctx, env, cfg, &f, fs.Args()[0], logger)
	}
	return serveHTTP(ctx, env, cfg, f.listen, logger)
}

// stdioUpstream puts the command argv, with the --stdio flags, in place of
// cfg's upstreams, and validates the result.
func stdioUpstream(env *Env, cfg *config.Config, f *gatewayFlags, argv []string) (int, error) {
	up := config.NewUpstream()
	up.Name, up.Command, up.PassEnv, up.Env = f.name, argv, f.passEnv, map[string]string{}
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return ExitUsage, fmt.Errorf("--env %q: want KEY=VALUE", kv)
		}
		// A flag value is literal: escape what the configuration would expand.
		up.Env[k] = strings.ReplaceAll(v, "${", "$${")
	}
	var err error
	if up.Tools, err = compileList(f.allowTools, f.denyTools); err != nil {
		return ExitUsage, fmt.Errorf("--allow-tool/--deny-tool: %w", err)
	}
	if up.Methods, err = compileList(f.allowMethod, f.denyMethod); err != nil {
		return ExitUsage, fmt.Errorf("--allow-method/--deny-method: %w", err)
	}
	if up.RequireToken, err = compileList(f.requireTok, nil); err != nil {
		return ExitUsage, fmt.Errorf("--require-token: %w", err)
	}
	// --stdio replaces the configuration's upstreams. Refuse rather than
	// silently drop the zero-trust requirements they declare.
	for i, u := range cfg.Gateway.Upstreams {
		if len(u.RequireToken.Allow) > 0 || len(u.RequireSignature.Allow) > 0 || len(u.Mandates) > 0 {
			return ExitConfig, fmt.Errorf("gateway.upstreams[%d] (%s) requires tokens, but --stdio replaces the configuration's upstreams with CMD: say which tools need a token with --require-token", i, u.Name)
		}
	}
	if len(f.requireTok) > 0 && f.configPath == "" {
		return ExitUsage, errors.New("--require-token needs --config FILE with gateway.zero_trust (the keys and the subject tokens are checked against)")
	}
	cfg.Gateway.Upstreams = []config.Upstream{up}
	cfg.Gateway.DefaultUpstream = ""
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(env.Stderr, err)
		if f.configPath == "" {
			return ExitUsage, errors.New("invalid --stdio flags")
		}
		return ExitConfig, fmt.Errorf("invalid configuration %s (with the --stdio command as its one upstream)", f.configPath)
	}
	return ExitOK, nil
}

// serveStdio wraps one stdio server, cfg's one upstream (stdioUpstream),
// for one client on stdin/stdout.
func serveStdio(ctx context.Context, env *Env, cfg *config.Config, f *gatewayFlags, program string, logger *slog.Logger) (int, error) {
	opts, err := assemble.FromConfig(cfg, logger)
	if err != nil {
		return ExitConfig, err
	}
	g, err := gateway.New(opts)
	if err != nil {
		return ExitConfig, err
	}
	client := transport.NewStream(env.Stdin, env.Stdout, closerOf(env.Stdin), transport.StreamOptions{
		Limits: opts.Limits, Logger: logger, Name: "client", ReplyInvalid: true,
		OnRefused: g.OnRefused(f.name), // a line that does not decode is audited too
	})
	logger.Info("warden gateway: relaying stdio", "upstream", f.name, "command", program, "pipeline", strings.Join(g.Upstream(f.name).Pipeline.Stages(), " → "))
	// The session outlives ctx (the signal): stop drains it first.
	served := make(chan error, 1)
	go func() { served <- g.ServeConn(context.WithoutCancel(ctx), client, f.name, "", false) }()
	select {
	case err := <-served: // the client or the server ended the session
		if cerr := g.Close(); cerr != nil { // flushes telemetry, closes the audit log and stores
			return ExitInternal, fmt.Errorf("closing: %w", cerr)
		}
		if err != nil {
			return ExitUpstream, err
		}
		return ExitOK, nil
	case <-ctx.Done():
	}
	code, err := stop(g, cfg.Gateway.Limits.DrainTimeout, logger)
	<-served // Close ended it
	return code, err
}

// stop stops a gateway gracefully, on SIGTERM or SIGINT: Drain lets the
// calls in flight finish within drain and answers the rest with -32035,
// rule shutdown; Close then ends the sessions and flushes the telemetry and
// the audit log. The exit code is ExitOK when every call finished, and
// ExitDrained when some had to be answered with the error.
func stop(g *gateway.Gateway, drain time.Duration, logger *slog.Logger) (int, error) {
	logger.Info("stopping: new sessions and requests are refused; calls in flight may finish", "drain_timeout", drain)
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	cut := g.Drain(ctx)
	cancel()
	if err := g.Close(); err != nil {
		return ExitInternal, fmt.Errorf("closing: %w", err)
	}
	if cut > 0 {
		return ExitDrained, fmt.Errorf("stopped: %d call(s) still in flight after the drain time (%s) were answered with -32035, rule shutdown", cut, drain)
	}
	logger.Info("stopped")
	return ExitOK, nil
}

// serveHTTP serves the configured upstreams on the listener until ctx ends.
func serveHTTP(ctx context.Context, env *Env, cfg *config.Config, listen string, logger *slog.Logger) (int, error) {
	if listen != "" {
		cfg.Gateway.Listen.Addr = listen
	}
	tlsConfig, err := assemble.TLSConfig(cfg.Gateway.Listen.TLS)
	if err != nil {
		return ExitConfig, err
	}
	opts, err := assemble.FromConfig(cfg, logger)
	if err != nil {
		return ExitConfig, err
	}
	g, err := gateway.New(opts)
	if err != nil {
		return ExitConfig, err
	}
	// Until it serves, a failure closes what was opened: the gateway's
	// stores, audit log and children, and the listener.
	var ln net.Listener
	serving := false
	defer func() {
		if !serving {
			if ln != nil {
				ln.Close()
			}
			g.Close()
		}
	}()
	ln, err = net.Listen("tcp", cfg.Gateway.Listen.Addr)
	if err != nil {
		return ExitUpstream, fmt.Errorf("listener: %w", err)
	}
	scheme := "http"
	if tlsConfig != nil {
		ln, scheme = tls.NewListener(ln, tlsConfig), "https"
	}
	if !isLoopback(ln.Addr()) {
		logger.Warn("the listener is not on a loopback address: anyone who can reach it can use the upstreams", "addr", ln.Addr().String())
	}
	if opts.Approvals != nil {
		jwtLogin, err := assemble.ConsoleJWT(cfg.Gateway)
		if err != nil {
			return ExitConfig, fmt.Errorf("gateway.auth: %w", err)
		}
		_, stop, err := serveAdmin(env, cfg.Gateway, opts, jwtLogin, logger)
		if err != nil {
			return ExitUpstream, err
		}
		defer stop()
	}
	srv := gatewayServer(g.Handler(), cfg.Gateway.Limits)
	fmt.Fprintf(env.Stderr, "warden gateway listening on %s://%s\n", scheme, ln.Addr())
	for _, r := range g.Routes(scheme + "://" + ln.Addr().String()) {
		fmt.Fprintf(env.Stderr, "  %s\n", r)
	}
	// Starting up (configuration, package initialisation, compiled
	// detectors and policies) leaves garbage behind; give its pages back
	// before serving rather than keep them until the scavenger gets to them.
	debug.FreeOSMemory()
	errc := make(chan error, 1)
	serving = true
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		g.Close()
		return ExitUpstream, err
	case <-ctx.Done():
	}
	// Shutdown closes the listener at once, then waits for the connections
	// to go idle: those of the calls in flight once they are answered
	// (Drain), the others' once Close has ended their sessions.
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		_ = srv.Shutdown(context.WithoutCancel(ctx))
	}()
	code, err := stop(g, cfg.Gateway.Limits.DrainTimeout, logger)
	select {
	case <-shut:
	case <-time.After(gateway.FlushTimeout):
		srv.Close()
	}
	return code, err
}

// serveAdmin starts the admin listener: the approval API (/v1/approvals)
// and the approval console (/console). It creates the admin token on first
// start and prints it once, to stderr; later starts only say where it is.
func serveAdmin(env *Env, gc config.GatewayConfig, opts gateway.Options, jwtLogin func(string) (string, error), logger *slog.Logger) (bound net.Addr, stop func(), err error) {
	admin := gc.Admin
	token, created, err := approval.LoadOrCreateToken(opts.DataDir)
	if err != nil {
		return nil, nil, fmt.Errorf("admin token: %w", err)
	}
	ln, err := net.Listen("tcp", admin.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("admin listener: %w", err)
	}
	co := console.Options{Queue: opts.Approvals, Token: token, VerifyJWT: jwtLogin, Audit: auditLogOf(opts),
		Pins: opts.Pinner, ConfirmLevels: admin.ConfirmLevels, Logger: logger}
	if o := admin.OIDC; o.ClientID != "" {
		co.OIDC = &console.OIDCOptions{Issuer: gc.Auth.Issuer, ClientID: o.ClientID, RedirectURL: o.RedirectURL}
		if co.OIDC.RedirectURL == "" {
			co.OIDC.RedirectURL = "http://" + ln.Addr().String() + "/console/oidc/callback"
		}
		if o.ClientSecretFile != "" {
			secret, err := os.ReadFile(o.ClientSecretFile)
			if err != nil {
				ln.Close()
				return nil, nil, fmt.Errorf("gateway.admin.oidc.client_secret_file: %w", err)
			}
			co.OIDC.ClientSecret = strings.TrimSpace(string(secret))
		}
	}
	h, err := adminHandler(co)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	if !isLoopback(ln.Addr()) {
		logger.Warn("the admin listener is not on a loopback address", "addr", ln.Addr().String())
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go srv.Serve(ln)
	tokenPath := filepath.Join(opts.DataDir, approval.TokenFile)
	fmt.Fprintf(env.Stderr, "approvals: http://%s/v1/approvals (warden approve list; token in %s)\n", ln.Addr(), tokenPath)
	fmt.Fprintf(env.Stderr, "approval console: http://%s/console (log in with your name and the admin token)\n", ln.Addr())
	if created {
		fmt.Fprintf(env.Stderr, "new admin token (shown this once; it stays in %s):\n  %s\n", tokenPath, token)
	}
	stopHook := func() {}
	if w := admin.Webhook; w.URL != "" {
		consoleURL := w.ConsoleURL
		if consoleURL == "" {
			consoleURL = "http://" + ln.Addr().String()
		}
		stopHook, err = console.StartWebhook(opts.Approvals, console.WebhookOptions{URL: w.URL, Slack: w.Slack, ConsoleURL: consoleURL, Logger: logger})
		if err != nil {
			srv.Close()
			return nil, nil, err
		}
	}
	return ln.Addr(), func() { stopHook(); srv.Close() }, nil
}

// adminHandler serves the admin listener's routes for the queue q. With an
// audit log, the console's history shows each decision's audit record.
func adminHandler(co console.Options) (http.Handler, error) {
	q, token := co.Queue, co.Token
	con, err := console.New(co)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/console", con)
	mux.Handle("/console/", con)
	mux.Handle("/", approval.Handler(q, token))
	return mux, nil
}

// auditLogOf returns the gateway's audit log, nil when it keeps none.
func auditLogOf(opts gateway.Options) *audit.Log {
	if rs, ok := opts.Recorder.(*gateway.Records); ok && rs != nil {
		return rs.Audit
	}
	return nil
}

func compileList(allow, deny []string) (config.List, error) {
	var l config.List
	for _, s := range allow {
		p, err := config.CompilePattern(s)
		if err != nil {
			return l, err
		}
		l.Allow = append(l.Allow, p)
	}
	for _, s := range deny {
		p, err := config.CompilePattern(s)
		if err != nil {
			return l, err
		}
		l.Deny = append(l.Deny, p)
	}
	return l, nil
}

// newLogger returns a slog logger writing to w.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(firstNonEmpty(level, "info"))); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch firstNonEmpty(format, "text") {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// closerOf returns r's Close method when it has one.
func closerOf(r io.Reader) io.Closer {
	if c, ok := r.(io.Closer); ok {
		return c
	}
	return io.NopCloser(nil)
}

// checkStore is warden gateway --check-store: it exits 0 when the
// configured replay store answers and consumes, and the pin store answers
// when it is in Redis; 4 when not. It checks both and prints a line for each.
func checkStore(ctx context.Context, env *Env, cfg *config.Config) (int, error) {
	code := ExitOK
	rep, err := assemble.CheckStore(ctx, cfg.Gateway.ZeroTrust)
	if err != nil {
		fmt.Fprintf(env.Stdout, "store %s: NOT OK: %v\n", storeWhere(rep), err)
		code = ExitUpstream
	} else {
		fmt.Fprintf(env.Stdout, "store %s: ok; epoch %s (tokens issued before it are refused)\n", storeWhere(rep), rep.Epoch.UTC().Format(time.RFC3339Nano))
	}
	pins, err := assemble.CheckPinStore(ctx, cfg.Gateway)
	switch {
	case err != nil:
		fmt.Fprintf(env.Stdout, "pin store %s: NOT OK: %v\n", storeWhere(pins), err)
		code = ExitUpstream
	case pins.Kind != "":
		fmt.Fprintf(env.Stdout, "pin store %s: ok\n", storeWhere(pins))
	}
	return code, nil
}

// storeWhere is a store's kind and, when known, its file or URL.
func storeWhere(rep assemble.StoreReport) string {
	if rep.Where != "" {
		return rep.Kind + " " + rep.Where
	}
	return rep.Kind
}
