// Package demo is the embedded scene that `warden demo` plays: the demo MCP
// server behind the gateway on a loopback listener, a scripted MCP client
// session through it, and a readable account of what was relayed, what was
// refused, and why. Every capability of warden adds its part here.
package demo

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/inprocess"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/ocsf"
	"github.com/agentwarden/warden/internal/pin"
	"github.com/agentwarden/warden/internal/policy"
	"github.com/agentwarden/warden/internal/revoke"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/taint"
	"github.com/agentwarden/warden/internal/transport"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// Options configures a demo run.
type Options struct {
	Out     io.Writer
	Verbose bool // also print the gateway's log

	// OCSFProfile is the profile of the OCSF events the gateway writes
	// (telemetry.ocsf.profile); "" is the standard one.
	OCSFProfile ocsf.Profile
	// Files, if set, is called with the paths of the demo's records (the
	// audit log, the spans and the OCSF events) once the gateway and the
	// audit log have closed them, before the demo's files are removed.
	Files func(Files)
	// Started, if set, is called with the gateway once it serves, before
	// the script runs: tests read its pipelines through its own API.
	Started func(*gateway.Gateway)
}

// Result is what a run established, for tests and the exit code.
type Result struct {
	Steps    []Step
	Relayed  int
	Refused  int
	Failures []string // expectations the run did not meet; empty on success
	// UpstreamSaw counts the tools/call requests that reached the demo
	// server, by tool name.
	UpstreamSaw map[string]int
	Canary      string
	// AuditRecords is how many records the audit log held at the end, its
	// chain verified.
	AuditRecords int
	// Spans and OCSFEvents are how many lines the span and OCSF files
	// held once the gateway stopped, and Dropped the telemetry its metrics
	// page counted as dropped (warden_telemetry_dropped_total).
	Spans, OCSFEvents int
	Dropped           uint64
	// Attacks are the verdicts of the OATF runs: directly, then through warden.
	Attacks []string
	// A2AReceived counts the messages booker, the A2A agent, received.
	A2AReceived int
	// Violated and ViolatedBehindWarden count the MCP model's principles
	// the model checker found violated, bare and behind warden.
	Violated, ViolatedBehindWarden int
}

// Step is one line of the account.
type Step struct {
	Action  string // what the client did
	Outcome string // "relayed" or "refused"
	By      string // stage and rule that refused it
	Detail  string // the answer, or the refusal's message
}

// scene is one demo run's moving parts.
type scene struct {
	opts   Options
	root   string
	canary string
	url    string
	res    *Result
	ring   *zerotrust.KeyRing // signs the demo's tokens
	queue  *approval.Queue    // calls held for the demo's approver
	// revoked is the zero-trust stage's revocation registry.
	revoked *revoke.Memory
	mu      sync.Mutex // guards res.UpstreamSaw and userSaw
	// userSaw is the last approval question alice's client showed her.
	userSaw string
	audit   *audit.Log // the gateway's audit log
	// auditOnce closes audit (closeAudit), with auditErr its error.
	auditOnce sync.Once
	auditErr  error
	// metrics is the gateway's metrics page (record.go).
	metrics  *gateway.Metrics
	auditKey *audit.SigningKey // signs the audit log's checkpoints
	keys     *keys             // the demo client's DPoP and signing keys
	billing  *billing          // the second server, whose pay tool is rug-pulled
	server   *mcp.Server       // the demo server
	endpoint *url.URL          // s.url, parsed: the htu of DPoP proofs
	// proofKey is the key the client proves possession of when it sends a
	// token (tiers.go); guarded by mu.
	proofKey map[string]*ecdsa.PrivateKey
	// agents is booker, the A2A agent behind the gateway at a2aURL, and
	// taint the stage that follows answers into its messages (agents.go).
	agents *agents
	a2aURL string
	taint  *gateway.Taint
	// gw is the gateway the client talks to: the header prints each
	// upstream's pipeline from it.
	gw *gateway.Gateway
}

// Run plays the demo and writes the account to opts.Out.
func Run(ctx context.Context, opts Options) (*Result, error) {
	s := &scene{opts: opts, res: &Result{UpstreamSaw: map[string]int{}}}
	root, err := os.MkdirTemp("", "warden-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	s.root = root
	if err := seedFiles(root); err != nil {
		return nil, err
	}
	s.canary = "canary-" + randomHex(8)
	s.res.Canary = s.canary

	stop, err := s.start(ctx)
	if err != nil {
		return nil, err
	}
	defer s.closeAudit()
	defer stop()

	s.header()
	if err := s.script(ctx); err != nil {
		return s.res, err
	}
	s.summary()
	if err := s.attackRuns(ctx); err != nil {
		return s.res, err
	}
	// The gateway stops: its Recorder ends and exports the last spans, and
	// the OCSF queue drains. The Record part reads what they wrote.
	stop()
	s.recorded()
	if err := s.closeAudit(); err != nil {
		return s.res, err
	}
	if opts.Files != nil {
		opts.Files(s.files())
	}
	if err := s.prove(ctx); err != nil {
		return s.res, err
	}
	s.outro()
	return s.res, nil
}

// start builds the demo server, the gateway and the loopback listener.
func (s *scene) start(ctx context.Context) (stop func(), err error) {
	logger := slog.New(slog.DiscardHandler)
	if s.opts.Verbose {
		logger = slog.New(slog.NewTextHandler(s.opts.Out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	server := demoserver.New(demoserver.Options{
		Root:   s.root,
		Env:    func() []string { return []string{"PATH=/usr/bin", "HOME=/home/demo", "WARDEN_DEMO_SECRET=" + s.canary} },
		Logger: logger,
	})
	s.server = server

	getEnv, err := config.CompilePattern("get_env")
	if err != nil {
		return nil, err
	}
	tools := config.List{Deny: []config.Pattern{getEnv}}
	transfer, err := config.CompilePattern("transfer_funds")
	if err != nil {
		return nil, err
	}
	// Zero-trust: a throwaway key ring in the demo's temp dir, and an
	// in-memory replay store. The demo client plays the platform that
	// issues tokens once "alice" approves a transfer.
	ring, err := zerotrust.LoadKeyRing(filepath.Join(s.root, ".warden-keys"))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		return nil, err
	}
	s.ring = ring
	if s.keys, err = newKeys(); err != nil {
		return nil, err
	}
	s.proofKey = map[string]*ecdsa.PrivateKey{}
	classifier, err := policy.NewClassifier(tierRules)
	if err != nil {
		return nil, err
	}
	// The replay store keeps no epoch (a bare store.Store): the key ring is
	// new in this process and the demo issues every token itself, so no
	// token can predate the store, and the epoch rule (whole-second iat,
	// 5 s of skew) would only refuse the demo's first seconds.
	var replay store.Store = struct{ store.Store }{store.NewMemory()}
	// The revocation registry (AASM P8): bob revokes a token by its id.
	s.revoked = revoke.NewMemory()
	s.queue = approval.New(time.Minute)
	zt := gateway.ZeroTrust{
		Keys: ring, Store: replay,
		Requires: gateway.RequireList(config.List{Allow: []config.Pattern{transfer}}),
		Subject:  func(*gateway.Call) (string, bool) { return "alice", true },
		Skew:     5 * time.Second,
		// Calls without a token are held until the demo's approver decides.
		Approvals: s.queue, Signer: ring, AdminApproval: true,
		// ... or until the client's user approves them (MCP elicitation).
		ElicitApproval: true,
		// Tier 2 and 3 (by classification): DPoP proofs for the listener's
		// URL, and alice's pinned signing key.
		URLs:       func(*gateway.Call) []*url.URL { return []*url.URL{s.endpoint} },
		ClientKeys: func(sub string) []jose.JSONWebKey { return map[string][]jose.JSONWebKey{"alice": s.keys.pinned()}[sub] },
		// A verified token is checked against the registry before it is
		// consumed.
		Revocations: s.revoked,
	}
	// The audit log: every message on record before it leaves, with a
	// checkpoint signed by its own audit key every 16 records, so that a
	// forged append or a rewritten log shows (warden keys audit).
	if s.auditKey, err = demoAuditKey(s.root); err != nil {
		return nil, err
	}
	auditLog, err := audit.Open(ctx, audit.KindSQLite, s.files().Audit,
		audit.Options{Checkpoint: audit.CheckpointOptions{Key: s.auditKey, Every: 16}})
	if err != nil {
		return nil, err
	}
	s.audit = auditLog
	// The audit log outlives the gateway (Run closes it once the Record
	// part has verified it), so it is not among the gateway's Closers.
	defer func() {
		if err != nil {
			s.closeAudit()
		}
	}()
	// Pinning for the billing server, the security processor for both.
	s.billing = newBilling()
	pinner, err := pin.New(ctx, pin.Options{Store: pin.NewMemory(), Logger: logger})
	if err != nil {
		return nil, err
	}
	pins := gateway.Pins{Pinner: pinner, Log: logger}
	proc, err := secproc.New(secproc.Config{InjectedInstructions: secproc.Policy{Action: secproc.Flag},
		// The demo has no person to ask about exfiltration; its other steps show approvals.
		Exfiltration: secproc.Policy{Disabled: true},
		// A rule of the operator's own, in CEL (gateway.security.rules in a
		// configuration file): the ledger is for transfer_funds to change.
		Rules: []secproc.Rule{{Name: "ledger-read-only", Category: secproc.FileAccess, Action: secproc.Deny,
			When: `kind == "tool_call" && tool == "write_file" && arguments.path.startsWith("ledger/")`}}})
	if err != nil {
		return nil, err
	}
	// Injected instructions in an answer are quarantined: made inert, the
	// rest of the answer kept.
	security := gateway.Security{Processor: proc, Subject: zt.Subject,
		Quarantine: func(c secproc.Category) bool { return c == secproc.InjectedInstructions }}
	// Taint: answers are fingerprinted; a message to booker that copies
	// one is refused (the demo holds tool calls, not A2A messages).
	s.taint = &gateway.Taint{Tracker: taint.New(taint.Config{}), Action: secproc.Deny}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	base := "http://" + ln.Addr().String()
	if s.agents, err = startAgents(base+gateway.A2APath+"booker", auditLog, s.taint, logger); err != nil {
		ln.Close()
		return nil, err
	}
	s.a2aURL = base + gateway.A2APath + "booker"
	limits := jsonrpc.Limits{}
	records, closers, err := s.recording(auditLog, logger)
	if err != nil {
		ln.Close()
		s.agents.stop()
		return nil, err
	}
	s.metrics = records.Metrics
	g, err := gateway.New(gateway.Options{
		Upstreams: []gateway.Upstream{{
			Name:      "demo",
			Transport: "in-process",
			Dial: func(ctx context.Context, _ bool) (transport.Conn, error) {
				c, err := inprocess.Dial(ctx, server, "demo", limits, logger)
				if err != nil {
					return nil, err
				}
				return &countingConn{Conn: c, scene: s}, nil
			},
			Pipeline: gateway.NewPipeline(gateway.MethodPolicy{}, gateway.NewToolPolicy(gateway.ToolLists{Tools: tools,
				RequireToken: config.List{Allow: []config.Pattern{transfer}}}), security,
				gateway.Classify{Classifier: classifier, Subject: zt.Subject}, *s.taint, zt),
		}, {
			Name:      "billing",
			Transport: "in-process",
			Dial: func(ctx context.Context, _ bool) (transport.Conn, error) {
				return inprocess.Dial(ctx, s.billing.server, "billing", limits, logger)
			},
			// The pin stage's response half filters tools/list answers; on
			// notifications/tools/list_changed warden lists billing's tools
			// itself (its re-check), so a changed definition is caught even
			// when the client does not list again.
			Pipeline: gateway.NewPipeline(gateway.MethodPolicy{}, pins),
		}},
		Default:        "demo",
		RequestTimeout: 30 * time.Second,
		// Bounded: a principal that opens sessions without end is refused
		// (limits.go).
		MaxSessionsPerPrincipal: sessionsPerPrincipal,
		Logger:                  logger,
		Closers:                 append(closers, replay),
		Recorder:                records,
		Metrics:                 records.Metrics,
		// The MCP listener's one user: every client of it is alice, so
		// that her MCP session and her agents' A2A messages (sent with her
		// API key, agents.go) share a scope.
		Authenticate: func(*http.Request) (string, *transport.AuthRefusal) { return "alice", nil },
		A2A:          map[string]http.Handler{"booker": s.agents.handler},
	})
	if err != nil {
		ln.Close()
		s.agents.stop()
		return nil, err
	}
	s.gw = g
	if s.opts.Started != nil {
		s.opts.Started(g)
	}
	srv := &http.Server{Handler: g.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	s.url = base + "/mcp"
	s.endpoint, _ = url.Parse(s.url)
	var once sync.Once
	return func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
			g.Close()
			s.agents.stop()
		})
	}, nil
}

// countingConn counts the tools/call requests that reach the demo server, so
// the demo can show that a refused call never arrived.
type countingConn struct {
	transport.Conn
	scene *scene
}

func (c *countingConn) Write(ctx context.Context, msg *jsonrpc.Message) error {
	if msg.Kind == jsonrpc.KindRequest && msg.Method == "tools/call" {
		if raw, ok := jsonrpc.Lookup(msg.Params, "name"); ok {
			if name, ok := jsonrpc.String(raw); ok {
				c.scene.mu.Lock()
				c.scene.res.UpstreamSaw[name]++
				c.scene.mu.Unlock()
			}
		}
	}
	return c.Conn.Write(ctx, msg)
}

func (s *scene) header() {
	w := s.opts.Out
	fmt.Fprintf(w, "warden demo: Guard, Record, Attack and Prove on an embedded default, nothing to install\n\n")
	fmt.Fprintf(w, "  upstream  demo: the warden demo MCP server, in this process (files sandboxed to a temp dir,\n")
	fmt.Fprintf(w, "            a fake ledger, and get_env, which leaks its environment on purpose)\n")
	fmt.Fprintf(w, "  listener  %s  (loopback only; Host and Origin checked; at most %d sessions per principal)\n", s.url, sessionsPerPrincipal)
	fmt.Fprintf(w, "  upstream  billing: a second MCP server whose pay tool will change its description (a rug pull)\n")
	fmt.Fprintf(w, "  agent     booker: an a2a-go agent at %s (A2A 1.0), reached by alice's planner;\n", s.a2aURL)
	fmt.Fprintf(w, "            its clients authenticate with API keys (gateway.auth): alice's, and bob's\n")
	// Each MCP upstream's pipeline as the gateway runs it (its stages in
	// StageTable's order), after the strict decoder; every message of all
	// three is audited.
	fmt.Fprintf(w, "  pipeline  demo:    %s\n", s.pipeline("demo"))
	fmt.Fprintf(w, "            billing: %s\n", s.pipeline("billing"))
	fmt.Fprintf(w, "            booker:  %s; every message of all three audited\n",
		strings.Join(append([]string{a2agw.StageWire}, a2agw.Stages()...), arrow))
	fmt.Fprintf(w, "  policy    tool get_env is denied; transfer_funds needs a token bound to alice, the tool and the\n")
	fmt.Fprintf(w, "            exact arguments, usable once (Zero-Trust Tool Invocation Standard); a call without\n")
	fmt.Fprintf(w, "            one is held until a person approves exactly its arguments: the client's user, asked\n")
	fmt.Fprintf(w, "            through MCP elicitation, or an operator (warden approve); the first decision wins.\n")
	fmt.Fprintf(w, "            Transfers above 10000 are Tier 2 (a DPoP-bound token), above 50000 Tier 3 (also the\n")
	fmt.Fprintf(w, "            client's signature by a pinned key), by CEL classification rules\n\n")
	fmt.Fprintf(w, "A scripted MCP client (go-sdk, streamable HTTP) talks to the gateway:\n\n")
}

// arrow separates the stages of a printed pipeline.
const arrow = " → "

// pipeline is upstream's pipeline as the gateway runs it: the strict
// decoder (its refusals name stage "wire"), then the stages of the
// upstream's Pipeline, in order.
func (s *scene) pipeline(upstream string) string {
	return strings.Join(append([]string{jsonrpc.StageWire}, s.gw.Upstream(upstream).Pipeline.Stages()...), arrow)
}

func (s *scene) summary() {
	w := s.opts.Out
	fmt.Fprintf(w, "\n%d relayed, %d refused.\n", s.res.Relayed, s.res.Refused)
	fmt.Fprintf(w, "The demo server received get_env %d times: its secret WARDEN_DEMO_SECRET never reached the client.\n",
		s.res.UpstreamSaw["get_env"])
	fmt.Fprintf(w, "It received transfer_funds %d times: the two approved calls and the three valid tokens', each with the arguments that were hashed.\n",
		s.res.UpstreamSaw["transfer_funds"])
}

// outro reports unmet expectations and says what to try next.
func (s *scene) outro() {
	w := s.opts.Out
	if len(s.res.Failures) > 0 {
		fmt.Fprintf(w, "\nUNEXPECTED:\n")
		for _, f := range s.res.Failures {
			fmt.Fprintf(w, "  - %s\n", f)
		}
	}
	fmt.Fprintf(w, "\nNext: run your own server behind warden with\n  warden gateway --stdio -- YOUR-MCP-SERVER\n")
}

// record prints and keeps one step.
func (s *scene) record(st Step) {
	s.res.Steps = append(s.res.Steps, st)
	mark := "✓"
	if st.Outcome == "refused" {
		mark = "✗"
		s.res.Refused++
	} else {
		s.res.Relayed++
	}
	n := len(s.res.Steps)
	fmt.Fprintf(s.opts.Out, "%3d %s %s\n", n, mark, st.Action)
	if st.By != "" {
		fmt.Fprintf(s.opts.Out, "        refused by %s\n", st.By)
	}
	if st.Detail != "" {
		fmt.Fprintf(s.opts.Out, "        %s\n", st.Detail)
	}
}

// expect notes a failed expectation.
func (s *scene) expect(ok bool, format string, args ...any) {
	if !ok {
		s.res.Failures = append(s.res.Failures, fmt.Sprintf(format, args...))
	}
}

func seedFiles(root string) error {
	files := map[string]string{
		"README.txt":            "This folder is the demo server's sandbox. Tools can read and write here, and nowhere else.\n",
		"notes/plan.md":         "# Plan\n- ship the gateway\n- bind approvals to exact parameters\n",
		"inbox/vendor-note.txt": vendorNote,
		"ledger/ACC_123.txt":    "account ACC_123, balance 1000.00\n",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// refusal extracts warden's refusal from a go-sdk client error, if it is one.
func refusal(err error) (stage, rule, message string, ok bool) {
	var werr *sdkjsonrpc.Error
	if !errors.As(err, &werr) {
		return "", "", "", false
	}
	var d jsonrpc.Detail
	if json.Unmarshal(werr.Data, &d) != nil || d.Stage == "" {
		return "", "", werr.Message, false
	}
	return d.Stage, d.Rule, werr.Message, true
}

// demoAuditKey makes a throwaway audit key in dir, as `warden keys audit`
// does, and loads it.
func demoAuditKey(dir string) (*audit.SigningKey, error) {
	private, _, _, err := audit.GenerateKey()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ".warden-audit.jwk")
	if err := os.WriteFile(path, private, 0o600); err != nil {
		return nil, err
	}
	return audit.LoadSigningKey(path)
}
