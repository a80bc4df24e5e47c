package attack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/telemetry"
)

// Defaults for Options.
const (
	DefaultMaxSession       = 5 * time.Minute
	DefaultReadinessTimeout = 30 * time.Second
	DefaultMaxTurns         = 16
)

// Options say where a run's actors connect and listen. The zero value runs
// nothing that needs an endpoint: every mode an actor uses must have its
// endpoint set, or Run returns an *EndpointError.
type Options struct {
	// MCPCommand runs an mcp_client actor's server as a child process over
	// stdio (program and arguments). MCPEnv adds variables to its
	// environment, which otherwise holds only transport.DefaultPassEnv.
	MCPCommand []string
	MCPEnv     map[string]string
	// MCPURL is an mcp_client actor's server (streamable HTTP).
	MCPURL string
	// AGUIURL is the agent an ag_ui_client actor POSTs RunAgentInput to.
	AGUIURL string
	// A2AURL is the JSON-RPC endpoint of the agent an a2a_client actor
	// talks to (A2A 0.3 or 1.0). Its card is looked for at
	// A2AURL/.well-known/agent-card.json, then at the origin's.
	A2AURL string
	// Header is added to every HTTP request client actors make.
	Header http.Header

	// Listen is the address server actors listen on: mcp_server with
	// streamable HTTP at /mcp/<actor> (and /mcp when there is one MCP
	// server actor); a2a_server at /a2a/<actor>, its card below that (and
	// POST / with the card at /.well-known/ when there is one A2A server
	// actor). Empty means 127.0.0.1:0 (a free loopback port).
	Listen string
	// Stdio serves the document's only mcp_server actor on Stdin and Stdout
	// instead of HTTP (a2a_server actors still listen on Listen).
	Stdio  bool
	Stdin  io.Reader
	Stdout io.Writer

	// OnReady is called once every server actor accepts connections and
	// before any client actor starts, with the URL of each server actor
	// (stdio actors are absent). A test may start the target here.
	OnReady func(endpoints map[string]string) error

	// GracePeriod overrides the document's attack.grace_period: how long to
	// keep observing after the client actors are done. Negative means 0.
	GracePeriod *time.Duration
	// MaxSession bounds the whole run. 0 means DefaultMaxSession.
	MaxSession time.Duration
	// ReadinessTimeout bounds the wait for server actors to listen.
	ReadinessTimeout time.Duration
	// MaxTurns bounds the follow-up runs an ag_ui_client actor sends to
	// return tool results within one phase. 0 means DefaultMaxTurns.
	MaxTurns int

	// Context, if set, runs the document in context mode (see
	// ContextOptions): warden's agent host, in front of a model, is the
	// ag_ui_client actors' agent, and AGUIURL is ignored.
	Context *ContextOptions

	// Eval configures indicator evaluation.
	Eval oatf.EvalOptions
	// HTTPClient makes the client actors' requests. Nil means a client
	// with no overall timeout that does not follow redirects.
	HTTPClient *http.Client
	// Logger receives the run's progress. Nil discards.
	Logger *slog.Logger
	// Spans, if set, records every message of the run as telemetry (the
	// AITF and OpenTelemetry names), with the actor as the server name.
	Spans *telemetry.Recorder
}

// EndpointError says that a document needs an endpoint the options lack.
type EndpointError struct {
	Actor, Mode, Need string
}

func (e *EndpointError) Error() string {
	return fmt.Sprintf("actor %s (%s) needs %s", e.Actor, e.Mode, e.Need)
}

// UnsupportedModeError says that the runtime cannot run a mode.
type UnsupportedModeError struct{ Actor, Mode string }

func (e *UnsupportedModeError) Error() string {
	return fmt.Sprintf("actor %s: mode %s is not supported by this runtime", e.Actor, e.Mode)
}

// ActorSummary is what one actor did.
type ActorSummary struct {
	Name     string `json:"name"`
	Mode     string `json:"mode"`
	Phase    string `json:"final_phase"`
	Phases   int    `json:"phases_reached"`
	Terminal bool   `json:"terminal_reached"`
	// PeerMessages counts the messages the actor's peer sent it (server
	// actors: requests; client actors: responses and events): 0 means the
	// target never took part.
	PeerMessages int    `json:"peer_messages"`
	Error        string `json:"error,omitempty"`
}

// Result is the outcome of one run.
type Result struct {
	Document   *oatf.Document
	Verdict    oatf.Verdict
	Indicators []IndicatorResult
	Trace      []Entry
	Dropped    int // trace entries beyond MaxTraceEntries
	Actors     []ActorSummary
	Endpoints  map[string]string
	Logs       []string // messages of `log` entry actions
	Started    time.Time
	Duration   time.Duration
	TimedOut   bool // MaxSession ended the run
	// Error says why the run cannot support its indicators' not_exploited
	// (an actor failed, the run timed out, no peer ever answered): the
	// verdict is then error. Empty when the run was complete.
	Error string
}

// Failed reports whether an actor failed (an unreachable target, a
// broken stream): the verdict may then miss evidence.
func (r *Result) Failed() bool {
	for _, a := range r.Actors {
		if a.Error != "" {
			return true
		}
	}
	return false
}

// runtime is the state of one Run shared by its actors.
type runtime struct {
	opts  Options
	log   *slog.Logger
	trace *Trace
	store *store
	http  *http.Client

	mu   sync.Mutex
	logs []string
}

func (rt *runtime) addLog(actor, msg string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.logs = append(rt.logs, actor+": "+msg)
}

// driver runs one actor in its mode.
type driver interface {
	// prepare binds listeners (servers) or checks endpoints; it must not
	// block on peers.
	prepare(ctx context.Context) error
	// run drives the actor until its work is done or ctx ends.
	run(ctx context.Context) error
	// endpoint returns the URL a server actor listens on, or "".
	endpoint() string
	// close releases the actor's resources.
	close()
}

// CheckEndpoints returns the *EndpointError or *UnsupportedModeError that
// Run would return for a normalized document and these options, without
// starting anything.
func CheckEndpoints(doc *oatf.Document, opts Options) error {
	if opts.Context != nil {
		if err := checkContext(doc); err != nil {
			return err
		}
	}
	modes := map[string]int{}
	actors := items(doc.Attack().Get("execution").Get("actors"))
	for _, av := range actors {
		modes[av.Get("mode").StringOr("")]++
	}
	for _, av := range actors {
		name, mode := av.Get("name").StringOr("default"), av.Get("mode").StringOr("")
		switch mode {
		case "mcp_server":
			if opts.Stdio && modes[mode] > 1 {
				return &EndpointError{name, mode, "HTTP (--listen): stdio serves only one mcp_server actor"}
			}
		case "a2a_server":
		case "a2a_client":
			if opts.A2AURL == "" {
				return &EndpointError{name, mode, "an A2A agent (--a2a-url)"}
			}
		case "mcp_client":
			if len(opts.MCPCommand) == 0 && opts.MCPURL == "" {
				return &EndpointError{name, mode, "an MCP server (--mcp-command or --mcp-url)"}
			}
		case "ag_ui_client":
			if opts.AGUIURL == "" && opts.Context == nil {
				return &EndpointError{name, mode, "an AG-UI agent (--agui-url)"}
			}
		default:
			return &UnsupportedModeError{name, mode}
		}
	}
	return nil
}

// Run executes a normalized document (see oatf.Load) and evaluates its
// indicators against the trace. It returns an error only when the run could
// not start (a missing endpoint, a listener that cannot bind); failures of
// peers during the run are reported in Result.Actors.
func Run(ctx context.Context, doc *oatf.Document, opts Options) (*Result, error) {
	if opts.Context != nil {
		return runContext(ctx, doc, opts)
	}
	rt := &runtime{opts: opts, log: opts.Logger, trace: NewTrace(), store: newStore(), http: opts.HTTPClient}
	if rt.log == nil {
		rt.log = slog.New(slog.DiscardHandler)
	}
	if rt.http == nil {
		rt.http = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	attack := doc.Attack()
	var actors []*actor
	var drivers []driver
	var servers, clients []int
	modes := map[string]int{}
	for _, av := range items(attack.Get("execution").Get("actors")) {
		modes[av.Get("mode").StringOr("")]++
	}
	var mux *http.ServeMux
	httpMux := func() *http.ServeMux {
		if mux == nil {
			mux = http.NewServeMux()
		}
		return mux
	}
	if err := CheckEndpoints(doc, opts); err != nil {
		return nil, err
	}
	for _, av := range items(attack.Get("execution").Get("actors")) {
		a := newActor(rt, av)
		var d driver
		switch a.mode {
		case "mcp_server":
			var m *http.ServeMux // nil: stdio
			if !opts.Stdio {
				m = httpMux()
			}
			d = newMCPServer(a, m, modes[a.mode] == 1)
		case "a2a_server":
			d = newA2AServer(a, httpMux(), modes[a.mode] == 1)
		case "a2a_client":
			d = newA2AClient(a)
		case "mcp_client":
			d = newMCPClient(a)
		case "ag_ui_client":
			d = newAGUIClient(a)
		}
		if strings.HasSuffix(a.mode, "_server") {
			servers = append(servers, len(actors))
		} else {
			clients = append(clients, len(actors))
		}
		actors = append(actors, a)
		drivers = append(drivers, d)
	}

	maxSession := cmpOr(opts.MaxSession, DefaultMaxSession)
	runCtx, cancel := context.WithTimeout(ctx, maxSession)
	defer cancel()
	res := &Result{Document: doc, Started: time.Now(), Endpoints: map[string]string{}}
	defer func() {
		for _, d := range drivers {
			d.close()
		}
	}()

	// Readiness gate: every server actor listens before any client starts.
	var srv *http.Server
	if mux != nil {
		addr := cmpOr(opts.Listen, "127.0.0.1:0")
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		base := "http://" + ln.Addr().String()
		for _, i := range servers {
			switch d := drivers[i].(type) {
			case *mcpServer:
				d.base = base
			case *a2aServer:
				d.base = base
			}
		}
	}
	readyCtx, readyCancel := context.WithTimeout(runCtx, cmpOr(opts.ReadinessTimeout, DefaultReadinessTimeout))
	for _, i := range append(slices.Clone(servers), clients...) {
		if err := drivers[i].prepare(readyCtx); err != nil {
			readyCancel()
			return nil, fmt.Errorf("actor %s: %w", actors[i].name, err)
		}
	}
	readyCancel()
	for _, i := range servers {
		if u := drivers[i].endpoint(); u != "" {
			res.Endpoints[actors[i].name] = u
		}
	}

	errs := make([]error, len(actors))
	var wg sync.WaitGroup
	serverCtx, stopServers := context.WithCancel(runCtx)
	defer stopServers()
	serverDone := make(chan struct{}, len(servers))
	for _, i := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = drivers[i].run(serverCtx)
			serverDone <- struct{}{}
		}()
	}
	// Ready means serving the first phase: a request that came before the
	// server's run entered it would meet no state (a default agent card,
	// no tools).
	for _, i := range servers {
		if idx, _, _, changed := actors[i].current(); idx < 0 {
			select {
			case <-changed:
			case <-runCtx.Done():
			}
		}
	}
	if opts.OnReady != nil {
		if err := opts.OnReady(res.Endpoints); err != nil {
			stopServers()
			wg.Wait()
			return nil, fmt.Errorf("on ready: %w", err)
		}
	}
	rt.log.Info("attack: servers ready", "id", attack.Get("id").StringOr(""), "endpoints", res.Endpoints)

	var cwg sync.WaitGroup
	for _, i := range clients {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			errs[i] = drivers[i].run(runCtx)
		}()
	}
	cwg.Wait()
	if len(clients) == 0 {
		// Server-only documents end when every server actor is done (its
		// peer went away in its terminal phase) or at MaxSession.
		for range servers {
			select {
			case <-serverDone:
			case <-runCtx.Done():
			}
		}
	}
	grace := time.Duration(0)
	if g := attack.Get("grace_period").StringOr(""); g != "" {
		grace, _ = oatf.ParseDuration(g)
	}
	if opts.GracePeriod != nil {
		grace = max(*opts.GracePeriod, 0)
	}
	if grace > 0 && runCtx.Err() == nil {
		t := time.NewTimer(grace)
		select {
		case <-t.C:
		case <-runCtx.Done():
		}
		t.Stop()
	}
	res.TimedOut = errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	stopServers()
	wg.Wait()
	for _, a := range actors {
		a.stop()
	}

	res.Trace = rt.trace.Entries()
	for i := range res.Trace {
		res.Trace[i].Attack = attack.Get("id").StringOr("")
	}
	res.Dropped = rt.trace.Dropped()
	peers := peerMessages(res.Trace, actors)
	for i, a := range actors {
		idx, _, terminal, _ := a.current()
		s := ActorSummary{Name: a.name, Mode: a.mode, Phase: a.phaseName(), Phases: idx + 1, Terminal: terminal,
			PeerMessages: peers[a.name]}
		if err := errs[i]; err != nil && !errors.Is(err, context.Canceled) {
			s.Error = err.Error()
		}
		res.Actors = append(res.Actors, s)
	}
	rt.mu.Lock()
	res.Logs = rt.logs
	rt.mu.Unlock()
	res.Indicators, res.Verdict = Evaluate(context.WithoutCancel(ctx), doc, res.Trace, oatf.NewEvaluator(opts.Eval))
	switch res.Verdict.Result {
	case oatf.NotExploited, oatf.Error:
		// No indicator matched: that means something only if the target
		// was really exercised.
		if why := res.incomplete(); why != "" {
			res.Verdict.Result, res.Error = oatf.Error, why
		}
	}
	res.Duration = time.Since(res.Started)
	return res, nil
}

// peerMessages counts, per actor, the trace entries its peer sent: requests
// to a server actor (but not a push notification it sends itself),
// responses and events to a client actor.
func peerMessages(trace []Entry, actors []*actor) map[string]int {
	server := map[string]bool{}
	for _, a := range actors {
		server[a.name] = strings.HasSuffix(a.mode, "_server")
	}
	n := map[string]int{}
	for _, e := range trace {
		if server[e.Actor] {
			if e.Direction == Request && e.Method != a2aPushEvent {
				n[e.Actor]++
			}
		} else if e.Direction == Response {
			n[e.Actor]++
		}
	}
	return n
}

// incomplete says why a run that matched nothing was not a real test of
// its target, or "" when it was: an actor failed (an unreachable target, an
// HTTP error, a broken stream), MaxSession cut the run short, or no actor's
// peer ever sent it anything.
func (r *Result) incomplete() string {
	var why []string
	peers := 0
	for _, a := range r.Actors {
		if a.Error != "" {
			why = append(why, "actor "+a.Name+" failed: "+a.Error)
		}
		peers += a.PeerMessages
	}
	if r.TimedOut {
		why = append(why, "the run reached its maximum session time")
	}
	if peers == 0 && len(why) == 0 {
		why = append(why, "no target ever sent an actor a message")
	}
	return strings.Join(why, "; ")
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
