package replay

// Replay behind warden (MCP here; A2A in warden_a2a.go, AG-UI in warden_agui.go): the same target,
// reached through a gateway built in-process from a YAML configuration the
// way `warden gateway` builds it, with the protections the principles ask
// for switched on:
//
//	security processor  injected instructions in results quarantined    P4
//	zero-trust          a token per call of the consequential tool       P1
//	approval hold       a second gateway holds that tool for the user's  P5
//	                    consent, asked through elicitation/create
//	audit log           every message recorded (JSONL)                   P6
//	strict wire layer   always on                                        WF
//
//	probe ─► Pipe ─► Gateway.ServeConn ─► upstream (child process | HTTP)   (stdio targets)
//	probe ─► HTTP client ─► Gateway.Handler on 127.0.0.1 ─► upstream        (HTTP targets)

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentwarden/warden/internal/assemble"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/transport"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// Upstream says how warden reaches an MCP target: a command (stdio) or a
// URL (streamable HTTP).
type Upstream struct {
	Command []string
	Env     map[string]string
	PassEnv []string // variables passed from warden's environment; nil: PATH
	URL     string
}

// WardenConfig returns the gateway configuration replay uses in front of
// up, with its data (keys, audit log) under dir.
func WardenConfig(up Upstream, sensitive string, dir string) string {
	return wardenConfig(up, sensitive, dir, false)
}

// WardenConsentConfig is WardenConfig with the consequential tool held for
// the user's consent (zero_trust.hold_for_approval, asked through MCP
// elicitation): the gateway the consent probe goes through.
func WardenConsentConfig(up Upstream, sensitive string, dir string) string {
	return wardenConfig(up, sensitive, dir, true)
}

func wardenConfig(up Upstream, sensitive string, dir string, consent bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\ngateway:\n  audit: {enabled: true, backend: jsonl, path: %s}\n",
		strconv.Quote(filepath.Join(dir, "audit.jsonl")))
	hold := ""
	if consent {
		hold = ", hold_for_approval: true, approval_channels: [elicitation]"
	}
	fmt.Fprintf(&b, "  zero_trust: {data_dir: %s, store: memory, subject: conform%s}\n", strconv.Quote(dir), hold)
	// Injected instructions in results are quarantined (P4); secrets in
	// outputs are only flagged, so that the P4 probe meets the
	// prompt-injection rule rather than the exfiltration one.
	b.WriteString("  security: {prompt_injection: quarantine, exfiltration: flag}\n")
	b.WriteString("  upstreams:\n    - name: target\n")
	if up.URL != "" {
		fmt.Fprintf(&b, "      url: %s\n", strconv.Quote(up.URL))
	} else {
		q := make([]string, len(up.Command))
		for i, a := range up.Command {
			q[i] = strconv.Quote(a)
		}
		pass := up.PassEnv
		if pass == nil {
			pass = []string{"PATH"}
		}
		fmt.Fprintf(&b, "      command: [%s]\n      pass_env: [%s]\n", strings.Join(q, ", "), strings.Join(pass, ", "))
		if len(up.Env) > 0 {
			b.WriteString("      env:\n")
			for k, v := range up.Env {
				fmt.Fprintf(&b, "        %s: %s\n", k, strconv.Quote(v))
			}
		}
	}
	if sensitive != "" {
		fmt.Fprintf(&b, "      require_token: [%s]\n", strconv.Quote(sensitive))
	}
	return b.String()
}

// BehindWarden returns t reached through an in-process warden gateway: in
// front of up for an MCP target, in front of t.URL for an A2A target
// (gateway.a2a, see warden_a2a.go) or an AG-UI one (gateway.agui, see
// warden_agui.go), where up is not used. dir holds the
// gateway's keys and audit log (a fresh, private directory). stop ends the
// gateway and its sessions.
func BehindWarden(t *Target, up Upstream, dir string, logger *slog.Logger) (*Target, func(), error) {
	var bt *Target
	var stop func()
	var err error
	switch t.Protocol {
	case A2A:
		bt, stop, err = behindWardenA2A(t, dir, logger)
	case AGUI:
		bt, stop, err = behindWardenAGUI(t, dir, logger)
	default:
		bt, stop, err = behindWarden(t, up, dir, logger, up.URL == "")
	}
	if err == nil {
		bt.AuditLogs = auditLogs(dir)
	}
	return bt, stop, err
}

// newGateway builds a gateway from a YAML configuration the way `warden
// gateway` does: parse, validate, FromConfig, New.
func newGateway(yaml, file string, logger *slog.Logger) (gateway.Options, *gateway.Gateway, error) {
	cfg, err := config.Parse([]byte(yaml), file)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return gateway.Options{}, nil, fmt.Errorf("warden configuration: %w", err)
	}
	opts, err := assemble.FromConfig(cfg, logger)
	if err != nil {
		return gateway.Options{}, nil, err
	}
	g, err := gateway.New(opts)
	return opts, g, err
}

// startingServer starts a loopback listener before its handler exists,
// for a configuration that must name the listener's URL: until serve is
// called it answers 503.
func startingServer() (srv *httptest.Server, serve func(http.Handler), err error) {
	var handler atomic.Pointer[http.Handler]
	srv, err = loopbackServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := handler.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.Error(w, "the gateway is starting", http.StatusServiceUnavailable)
	}))
	return srv, func(h http.Handler) { handler.Store(&h) }, err
}

// behindWardenVia is BehindWarden with the client side chosen: stdio (a
// pipe into Gateway.ServeConn, as `warden gateway --stdio` serves) or the
// HTTP listener.
func behindWardenVia(t *Target, up Upstream, dir string, stdio bool) (*Target, func(), error) {
	bt, stop, err := behindWarden(t, up, dir, nil, stdio)
	if err == nil {
		bt.AuditLogs = auditLogs(dir)
	}
	return bt, stop, err
}

func behindWarden(t *Target, up Upstream, dir string, logger *slog.Logger, stdio bool) (*Target, func(), error) {
	if t.Protocol != MCP {
		return nil, nil, fmt.Errorf("replay behind warden covers MCP, A2A and AG-UI; %s cannot be replayed behind it", t.Protocol)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	bt := *t
	bt.Name = t.Name + "+warden"
	bt.BehindWarden = true
	bt.DialEnv, bt.ConsentDial = nil, nil
	bt.Notes = append(append([]string(nil), t.Notes...),
		"behind warden: require_token ["+t.Sensitive.Name+"], security {prompt_injection: quarantine, exfiltration: flag}, audit log on, strict wire layer; "+
			"the consent probe through a second gateway with zero_trust {hold_for_approval: true, approval_channels: [elicitation]}")
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	for _, consent := range []bool{false, true} {
		d := dir
		if consent {
			d = filepath.Join(dir, "consent")
		}
		g, err := guardedGateway(wardenConfig(up, t.Sensitive.Name, d, consent), d, logger)
		if err != nil {
			stop()
			return nil, nil, err
		}
		dial, url, end, err := serveGateway(g, stdio, mcp.Stateless(t.Profile))
		if err != nil {
			g.Close()
			stop()
			return nil, nil, err
		}
		stops = append(stops, func() { end(); g.Close() })
		if consent {
			bt.ConsentDial = dial
		} else {
			bt.Dial, bt.URL = dial, url
		}
	}
	return &bt, stop, nil
}

// guardedGateway makes dir (and its key ring) and builds the gateway of
// yaml there.
func guardedGateway(yaml, dir string, logger *slog.Logger) (*gateway.Gateway, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dir))
	if err == nil && len(ring.Keys()) == 0 {
		_, err = ring.Rotate("")
	}
	if err != nil {
		return nil, fmt.Errorf("warden key ring: %w", err)
	}
	_, g, err := newGateway(yaml, "conform-replay.yaml", logger)
	return g, err
}

// serveGateway serves g to replay's client: over HTTP on 127.0.0.1 (url is
// its endpoint), or, with stdio, through a pipe into Gateway.ServeConn per
// connection, as `warden gateway --stdio` serves. end stops serving.
func serveGateway(g *gateway.Gateway, stdio, stateless bool) (dial func(context.Context) (transport.Conn, error), url string, end func(), err error) {
	if !stdio {
		srv, err := loopbackServer(g.Handler())
		if err != nil {
			return nil, "", nil, err
		}
		url = srv.URL + "/mcp"
		return func(context.Context) (transport.Conn, error) {
			return transport.NewHTTPClient(transport.HTTPClientOptions{URL: url}), nil
		}, url, srv.Close, nil
	}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int64
	dial = func(context.Context) (transport.Conn, error) {
		client, relay := streamPair()
		session := fmt.Sprintf("conform-%d", n.Add(1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = g.ServeConn(ctx, relay, "target", session, stateless)
		}()
		return client, nil
	}
	return dial, "", func() { cancel(); wg.Wait() }, nil
}

// Counterexamples checks every property of m (without, then with
// Adversary transitions, as the matrix does) and returns the traces of the
// violated ones by "model/property".
func Counterexamples(ctx context.Context, m *ir.Model, o check.Options) (map[string]*Trace, error) {
	p, err := check.Compile(m)
	if err != nil {
		return nil, err
	}
	out := map[string]*Trace{}
	for _, pr := range m.Properties {
		for _, noAdv := range []bool{true, false} {
			oo := o
			oo.NoAdversary = noAdv
			r, err := check.Check(ctx, p, pr.ID, oo)
			if err != nil {
				return nil, err
			}
			if r.Status == check.Violated {
				tr, err := FromCheck(r.Trace)
				if err != nil {
					return nil, err
				}
				out[m.Name+"/"+pr.ID] = tr
				break
			}
		}
	}
	return out, nil
}

// streamPair connects two newline-delimited JSON-RPC streams, so that what
// the probe writes reaches the gateway as bytes and passes its strict
// decoder, as on `warden gateway --stdio` (a transport.Pipe hands messages
// over without decoding them).
func streamPair() (client, server transport.Conn) {
	cr, sw := io.Pipe() // server writes, client reads
	sr, cw := io.Pipe() // client writes, server reads
	client = transport.NewStream(cr, cw, closers{cw, cr}, transport.StreamOptions{Name: "conform-client"})
	server = transport.NewStream(sr, sw, closers{sw, sr}, transport.StreamOptions{Name: "conform-gateway"})
	return client, server
}

type closers []io.Closer

func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
