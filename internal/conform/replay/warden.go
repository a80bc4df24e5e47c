package replay

// Replay behind warden (MCP here; A2A in warden_a2a.go, AG-UI in warden_agui.go): the same target,
// reached through a gateway built in-process from a YAML configuration the
// way `warden gateway` builds it, with the protections the principles ask
// for switched on:
//
//	tool deny list      *env* tools (the leak)                          P4
//	zero-trust          a token per call of the consequential tool       P1, P5
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
	URL     string
}

// WardenConfig returns the gateway configuration replay uses in front of
// up, with its data (keys, audit log) under dir.
func WardenConfig(up Upstream, sensitive string, dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\ngateway:\n  audit: {enabled: true, backend: jsonl, path: %s}\n",
		strconv.Quote(filepath.Join(dir, "audit.jsonl")))
	fmt.Fprintf(&b, "  zero_trust: {data_dir: %s, store: memory, subject: conform}\n", strconv.Quote(dir))
	b.WriteString("  upstreams:\n    - name: target\n")
	if up.URL != "" {
		fmt.Fprintf(&b, "      url: %s\n", strconv.Quote(up.URL))
	} else {
		q := make([]string, len(up.Command))
		for i, a := range up.Command {
			q[i] = strconv.Quote(a)
		}
		fmt.Fprintf(&b, "      command: [%s]\n      pass_env: [PATH]\n", strings.Join(q, ", "))
		if len(up.Env) > 0 {
			b.WriteString("      env:\n")
			for k, v := range up.Env {
				fmt.Fprintf(&b, "        %s: %s\n", k, strconv.Quote(v))
			}
		}
	}
	b.WriteString("      tools: {deny: [\"*env*\", \"*Env*\"]}\n")
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
	switch t.Protocol {
	case A2A:
		return behindWardenA2A(t, dir, logger)
	case AGUI:
		return behindWardenAGUI(t, dir, logger)
	}
	return behindWarden(t, up, dir, logger, up.URL == "")
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
	opts, err := gateway.FromConfig(cfg, logger)
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
	return behindWarden(t, up, dir, nil, stdio)
}

func behindWarden(t *Target, up Upstream, dir string, logger *slog.Logger, stdio bool) (*Target, func(), error) {
	if t.Protocol != MCP {
		return nil, nil, fmt.Errorf("replay behind warden covers MCP, A2A and AG-UI; %s cannot be replayed behind it", t.Protocol)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dir))
	if err == nil && len(ring.Keys()) == 0 {
		_, err = ring.Rotate("")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("warden key ring: %w", err)
	}
	_, g, err := newGateway(WardenConfig(up, t.Sensitive.Name, dir), "conform-replay.yaml", logger)
	if err != nil {
		return nil, nil, err
	}
	bt := *t
	bt.Name = t.Name + "+warden"
	bt.BehindWarden = true
	bt.Notes = append(append([]string(nil), t.Notes...),
		"behind warden: tools {deny: [*env*, *Env*]}, require_token ["+t.Sensitive.Name+"], audit log on, strict wire layer")
	stateless := mcp.Stateless(t.Profile)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	if !stdio {
		srv, err := loopbackServer(g.Handler())
		if err != nil {
			cancel()
			g.Close()
			return nil, nil, err
		}
		url := srv.URL + "/mcp"
		bt.URL = url
		bt.Dial = func(context.Context) (transport.Conn, error) {
			return transport.NewHTTPClient(transport.HTTPClientOptions{URL: url}), nil
		}
		return &bt, func() { cancel(); srv.Close(); g.Close() }, nil
	}
	n := 0
	var mu sync.Mutex
	bt.Dial = func(context.Context) (transport.Conn, error) {
		client, relay := streamPair()
		mu.Lock()
		n++
		session := fmt.Sprintf("conform-%d", n)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = g.ServeConn(ctx, relay, "target", session, stateless)
		}()
		return client, nil
	}
	return &bt, func() { cancel(); wg.Wait(); g.Close() }, nil
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
