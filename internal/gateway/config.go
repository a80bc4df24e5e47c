package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// FromConfig turns a validated configuration into gateway Options: one
// upstream per configured server, each with its dial function and its
// pipeline (wire checks happen in the transports; then method-policy with the
// gateway-wide and the upstream's lists; then tool-policy).
func FromConfig(cfg *config.Config, logger *slog.Logger) (Options, error) {
	gc := cfg.Gateway
	limits := jsonrpc.Limits{MaxBytes: gc.Limits.MaxMessageBytes, MaxDepth: gc.Limits.MaxDepth}
	opts := Options{
		Default:                  gc.DefaultUpstream,
		Path:                     gc.Listen.Path,
		Limits:                   limits,
		RequestTimeout:           gc.Limits.RequestTimeout,
		SessionIdleTimeout:       gc.Limits.SessionIdleTimeout,
		AllowedHosts:             gc.Listen.AllowedHosts,
		AllowedOrigins:           gc.Listen.AllowedOrigins,
		InsecureDisableHostCheck: gc.Listen.InsecureDisableHostCheck,
		Logger:                   logger,
	}
	for _, u := range gc.Upstreams {
		dial, closeFn, err := dialer(u, limits, logger)
		if err != nil {
			return Options{}, fmt.Errorf("upstream %q: %w", u.Name, err)
		}
		opts.Upstreams = append(opts.Upstreams, Upstream{
			Name:      u.Name,
			Transport: u.Transport(),
			Dial:      dial,
			Close:     closeFn,
			Pipeline: NewPipeline(
				MethodPolicy{Lists: []Permitter{gc.Methods, u.Methods}},
				ToolPolicy{List: u.Tools},
			),
		})
	}
	return opts, nil
}

// dialer returns the function that opens a session's connection to u, and
// the function that releases what it keeps between sessions (nil if none).
// A stdio upstream serves stateful sessions with a child each, and all
// stateless sessions with one shared child. Secrets referenced as
// ${env:NAME} are resolved here, at start, not when the file is parsed.
func dialer(u config.Upstream, limits jsonrpc.Limits, logger *slog.Logger) (func(context.Context, bool) (transport.Conn, error), func(), error) {
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
		return func(context.Context, bool) (transport.Conn, error) {
			return transport.NewHTTPClient(transport.HTTPClientOptions{
				URL: u.URL, Client: client, Header: h.Clone(), Limits: limits, Logger: logger, Name: u.Name,
			}), nil
		}, nil, nil
	}
	return nil, nil, fmt.Errorf("unknown transport %q", u.Transport())
}
