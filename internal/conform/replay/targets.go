package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agentwarden/warden/internal/transport"
)

// TargetOptions complete a target named on the command line.
type TargetOptions struct {
	Profile   string // MCP revision or A2A version
	Tool      string // the harmless tool (default "echo")
	Sensitive string // the consequential tool (default: Tool)
	Leak      string // a tool known to return the environment
	// CredentialEnv (stdio) names the variable the server takes its
	// credential from; it is passed from replay's own environment, and
	// the identity probe starts the server without it.
	CredentialEnv string
	CardKeys      string // A2A: a JWKS file of the keys that sign the agent's card
	Logger        *slog.Logger
}

// Spec forms ParseTarget accepts.
const SpecHelp = "mock:mcp|mock:mcp-hardened|mock:mcp-http|mock:a2a|mock:a2a-hardened|mock:agui|mock:agui-broken|" +
	"stdio:PROGRAM ARGS...|http://HOST/mcp|a2a+http://HOST/PATH|agui+http://HOST/PATH"

// ParseTarget turns a target spec into a Target, the Upstream warden
// would front an MCP target with (zero for A2A, which warden fronts at the
// Target's URL, for AG-UI and for mocks reached through a pipe), and a stop
// function that releases what it started.
//
//	mock:mcp[-hardened|-http]   the fake MCP server (pipe, or HTTP on 127.0.0.1)
//	mock:a2a[-hardened]         the fake A2A agent
//	mock:agui[-broken]          the fake AG-UI agent
//	stdio:PROGRAM ARGS...       an MCP server run as a child, once per probe, with
//	                            only PATH, a planted directive (CONFORM_NOTE) and the
//	                            credential variable (CredentialEnv) in its environment
//	http(s)://…                 an MCP server over streamable HTTP
//	a2a+http(s)://…             an A2A JSON-RPC endpoint
//	agui+http(s)://…            an AG-UI run endpoint
func ParseTarget(spec string, o TargetOptions) (*Target, Upstream, func(), error) {
	tool := o.Tool
	if tool == "" {
		tool = "echo"
	}
	complete := func(t *Target) {
		if o.Profile != "" {
			t.Profile = o.Profile
		}
		if t.Protocol == A2A {
			t.CardKeys = o.CardKeys
		}
		if t.Protocol != MCP || t.Mode == "mock" {
			return
		}
		t.Harmless = Tool{Name: tool, Args: map[string]any{"message": "early"}}
		t.Sensitive = Tool{Name: o.Sensitive}
		if o.Sensitive == "" {
			t.Sensitive = t.Harmless
		}
		t.Leak = Tool{Name: o.Leak}
	}
	switch {
	case strings.HasPrefix(spec, "mock:"):
		var t *Target
		var stop func()
		var err error
		var up Upstream
		switch strings.TrimPrefix(spec, "mock:") {
		case "mcp", "mcp-hardened":
			t, stop, err = MockMCP(strings.HasSuffix(spec, "hardened"), false, o.Profile)
		case "mcp-http", "mcp-http-hardened":
			t, stop, err = MockMCP(strings.HasSuffix(spec, "hardened"), true, o.Profile)
			if err == nil {
				up.URL = t.URL
			}
		case "a2a", "a2a-hardened":
			t, stop, err = MockA2A(strings.HasSuffix(spec, "hardened"), o.Profile)
		case "agui", "agui-broken":
			t, stop, err = MockAGUI(strings.HasSuffix(spec, "broken"))
		default:
			return nil, Upstream{}, nil, fmt.Errorf("unknown mock target %q (want %s)", spec, SpecHelp)
		}
		if err != nil {
			return nil, Upstream{}, nil, err
		}
		complete(t)
		return t, up, stop, nil
	case strings.HasPrefix(spec, "stdio:"):
		argv := strings.Fields(strings.TrimPrefix(spec, "stdio:"))
		if len(argv) == 0 {
			return nil, Upstream{}, nil, fmt.Errorf("stdio target without a program")
		}
		canary := "canary-" + randomHex(8)
		env := map[string]string{DirectiveEnv: PlantedDirective(canary)}
		pass := []string{"PATH"}
		note := "child environment: PATH and " + DirectiveEnv + "=<a planted directive> only"
		if o.CredentialEnv != "" {
			pass = append(pass, o.CredentialEnv)
			note = "child environment: PATH, " + o.CredentialEnv + " (its credential) and " + DirectiveEnv + "=<a planted directive> only"
		}
		t := &Target{Name: "stdio:" + argv[0], Protocol: MCP, Mode: "live", Canary: canary,
			CredentialEnv: o.CredentialEnv, Notes: []string{note}}
		t.UseCommand(argv, env, pass, o.Logger)
		complete(t)
		return t, Upstream{Command: argv, Env: env, PassEnv: pass}, func() {}, nil
	case strings.HasPrefix(spec, "a2a+http://"), strings.HasPrefix(spec, "a2a+https://"):
		t := &Target{Name: spec, Protocol: A2A, Mode: "live", URL: strings.TrimPrefix(spec, "a2a+")}
		complete(t)
		return t, Upstream{}, func() {}, nil
	case strings.HasPrefix(spec, "agui+http://"), strings.HasPrefix(spec, "agui+https://"):
		t := &Target{Name: spec, Protocol: AGUI, Mode: "live", URL: strings.TrimPrefix(spec, "agui+")}
		complete(t)
		return t, Upstream{}, func() {}, nil
	case strings.HasPrefix(spec, "http://"), strings.HasPrefix(spec, "https://"):
		t := &Target{Name: spec, Protocol: MCP, Mode: "live", URL: spec}
		t.Dial = func(context.Context) (transport.Conn, error) {
			return transport.NewHTTPClient(transport.HTTPClientOptions{URL: spec, Logger: o.Logger}), nil
		}
		complete(t)
		return t, Upstream{URL: spec}, func() {}, nil
	}
	return nil, Upstream{}, nil, fmt.Errorf("unknown target %q (want %s)", spec, SpecHelp)
}

func discard(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// UseCommand makes t a stdio target: each connection starts argv as a
// child with env and the variables pass names from replay's own
// environment (Dial), and the identity probe can start it with another
// environment (DialEnv).
func (t *Target) UseCommand(argv []string, env map[string]string, pass []string, logger *slog.Logger) {
	t.Env = env
	t.DialEnv = func(_ context.Context, env map[string]string, pass []string) (transport.Conn, error) {
		return transport.Command(transport.CommandSpec{Path: argv[0], Args: argv[1:], Env: env,
			PassEnv: pass, Name: "conform-target", Logger: discard(logger)})
	}
	t.Dial = func(ctx context.Context) (transport.Conn, error) { return t.DialEnv(ctx, env, pass) }
}
