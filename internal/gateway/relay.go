package gateway

// The relay joins one client connection to one upstream connection for the
// life of a session:
//
//	client Conn ──Read──► newCall ─► pipeline ─► track id ──Write──► upstream Conn
//	client Conn ◄─Write── match id (drop unsolicited) ◄──────Read─── upstream Conn
//
// Ids are not rewritten: each session has its own upstream connection, so the
// client's ids are unique on it. Every message is relayed as the exact bytes
// the transport validated (Message.Raw).
//
// Each direction is relayed by one goroutine: Run's loops, which Read, or,
// for a conn that pushes (transport.Pusher: stdio streams and child
// processes), the conn's own reading goroutine, which saves a hand-off per
// message; the loop then only waits for the conn's end. Either way the
// messages of one direction are relayed one at a time, in order, except a
// request a stage may hold, which is checked on a goroutine of its own
// (relayHeld).
//
// The relay keeps these tables, guarded by mu:
//   - pending: client requests the upstream has not answered yet. A response
//     must match one (an upstream cannot answer a question nobody asked), and
//     when the upstream dies or times out each pending request gets an error.
//   - asked: upstream requests (sampling, elicitation, roots) the client has
//     not answered yet. A client response must match one. Each holds the
//     Recorder's open operation (its span), which the answer closes; when
//     the session ends first, Run closes it as unanswered.
//   - own: requests warden itself sent the client (elicitation/create, to
//     ask the user to approve a held call). Their answers stay in warden.
//   - ownUp: requests warden itself sent the upstream (tools/list, after
//     notifications/tools/list_changed; relay_relist.go). Their answers
//     stay in warden, and a client request cannot reuse their ids.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/transport"
)

// Relay relays one session. Create it with NewRelay and call Run once.
type Relay struct {
	// Immutable after NewRelay.
	client, upstream transport.Conn
	pipeline         *Pipeline
	upstreamName     string
	session          string
	principal        string
	timeout          time.Duration
	observe          func(Decision)
	recorder         Recorder
	results          ResultFilter                  // the pipeline's response halves; nil if none
	answers          func(context.Context, Answer) // the pipeline's AnswerStages; nil if none
	tools            ToolInfo
	recheck          func(ctx context.Context, upstream string, result []byte) error // the pipeline's RecheckStage; nil if none
	unchecked        *UncheckedLists                                                 // nil but for stateless requests
	draining         func() bool                                                     // nil, or whether the gateway is stopping (relay_stop.go)
	onInitialized    func(sessionless bool)
	log              *slog.Logger
	born             time.Time // request deadlines count from here (pendingCall.due)

	relists sync.WaitGroup // the re-list goroutine; Add only under mu while !closed
	notes   noteQueue      // upstream notifications waiting for their records (relay_notify.go)
	holds   sync.WaitGroup // relayHeld's goroutines; Add only under mu while !closed
	busy    atomic.Int64   // client requests being relayed (clientMessage); see inFlight
	cut     atomic.Int64   // calls answered with -32035 shutdown at the drain time (relay_stop.go)

	mu      sync.Mutex
	pending map[string]pendingCall             // by id text; guarded by mu
	asked   map[string]askedCall               // by id text; guarded by mu
	holding map[string]context.CancelCauseFunc // requests still in a blocking pipeline, by id text; guarded by mu
	own     map[string]chan *jsonrpc.Message   // warden's own requests to the client, by id text; guarded by mu
	elicit  bool                               // the client declared form elicitation; guarded by mu
	ready   bool                               // stateless, or the upstream answered initialize; guarded by mu
	opened  bool                               // the upstream answered initialize; guarded by mu
	closed  bool                               // no more pending or asked entries; guarded by mu
	expiry  expiry                             // the request timeout's one timer (relay_deadline.go); guarded by mu

	// The re-list after list_changed (relay_relist.go); guarded by mu.
	ownUp      map[string]chan *jsonrpc.Message // warden's own requests to the upstream, by id text
	relisting  chan struct{}                    // closed when the re-list in flight is done; nil when none is
	again      bool                             // list_changed came again while a re-list was in flight
	announcing bool                             // a list_changed waits to reach the client (relay_relist.go)
	stale      error                            // why the last re-list failed; nil once tools are checked again
}

type pendingCall struct {
	id     jsonrpc.ID
	method string
	tool   string        // of a tools/call
	level  int           // its classification (Call.Level)
	args   []byte        // its arguments, for Answers
	approv string        // the approval id of a held call that was approved (Call.ApprovalID)
	due    time.Duration // when it times out, after Relay.born (relay_deadline.go); 0 without a request timeout
	open   any           // the Recorder's open operation (Decision.Open), if any
}

// askedCall is an upstream request the client has not answered yet.
type askedCall struct {
	id     jsonrpc.ID
	method string
	open   any // the Recorder's open operation (Decision.Open), if any
}

// RelayOptions configures a Relay.
type RelayOptions struct {
	Upstream string // upstream name, for policy messages and logs
	Session  string // session id, "" for stdio and stateless sessions
	// Pipeline is the stage table of the session's upstream: the request
	// halves check each client message, the response halves each answer
	// (ResultStage, AnswerStage) and warden's own re-lists (RecheckStage).
	Pipeline *Pipeline
	// RequestTimeout bounds how long a client request may wait for the
	// upstream's answer; 0 means no bound.
	RequestTimeout time.Duration
	// Observe, if set, is called for every message handled, synchronously,
	// from the goroutine relaying it (several at once when the pipeline may
	// block). It must not block.
	Observe func(Decision)
	// Principal is the authenticated client of the session ("" when the
	// listener does not authenticate, and on stdio).
	Principal string
	// Stateless marks a 2026-07-28 stateless session: there is no
	// initialize, so requests are not held to the session lifecycle.
	Stateless bool
	// Recorder, if set, keeps a record of every message handled before it
	// leaves the gateway (the audit log, telemetry). When it fails, the
	// message does not go through (fail-secure).
	Recorder Recorder
	// Tools looks up what the upstream declared about its tools (for
	// classification rules and approvals).
	Tools ToolInfo
	// Unchecked, with a pipeline that re-checks tools (RecheckStage: with
	// it, notifications/tools/list_changed from the upstream makes warden
	// list the upstream's tools itself and check them, and a tools/call
	// waits for that check, relay_relist.go), carries a failed re-list beyond this relay:
	// set for the requests of the stateless revision, each relayed apart,
	// so that a re-list that failed on one (the client's listen stream)
	// refuses the principal's calls on the others (relay_relist.go).
	Unchecked *UncheckedLists
	// Draining, if set, tells whether the gateway is stopping: requests
	// are then refused with -32035, rule shutdown (Gateway.Drain).
	Draining func() bool
	// OnInitialized, if set, is told after each initialize answer whether
	// the upstream keeps no session (transport.Sessionless), when its conn
	// can tell. The client is then shown the same (SessionlessView).
	OnInitialized func(sessionless bool)
	Logger        *slog.Logger
}

// NewRelay returns a relay between client and upstream.
func NewRelay(client, upstream transport.Conn, opts RelayOptions) *Relay {
	if opts.Pipeline == nil {
		opts.Pipeline = NewPipeline()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Relay{
		client:        client,
		upstream:      upstream,
		pipeline:      opts.Pipeline,
		upstreamName:  opts.Upstream,
		session:       opts.Session,
		principal:     opts.Principal,
		timeout:       opts.RequestTimeout,
		observe:       opts.Observe,
		recorder:      opts.Recorder,
		results:       opts.Pipeline.resultFilter(),
		answers:       opts.Pipeline.answersHook(),
		tools:         opts.Tools,
		recheck:       opts.Pipeline.rechecker(),
		unchecked:     opts.Unchecked,
		draining:      opts.Draining,
		onInitialized: opts.OnInitialized,
		log:           opts.Logger,
		born:          time.Now(),
		pending:       make(map[string]pendingCall),
		asked:         make(map[string]askedCall),
		holding:       make(map[string]context.CancelCauseFunc),
		own:           make(map[string]chan *jsonrpc.Message),
		ownUp:         make(map[string]chan *jsonrpc.Message),
		ready:         opts.Stateless,
	}
}

// Run relays until either side ends or ctx is done, then closes both
// connections and answers every request still pending with an error. It
// returns nil when the client ended the session.
func (r *Relay) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if r.principal != "" && principalFrom(ctx) == "" {
		ctx = WithPrincipal(ctx, r.principal) // for the stages and filters that key state by it
	}

	// A conn that can push its messages (a stdio stream, a child process)
	// has them relayed on the goroutine that read them, one hand-off less
	// per message; the loops below then only wait for its end.
	if p, ok := r.client.(transport.Pusher); ok {
		p.Push(func(m *jsonrpc.Message) { r.clientMessage(ctx, m) })
	}
	if p, ok := r.upstream.(transport.Pusher); ok {
		p.Push(func(m *jsonrpc.Message) { r.upstreamMessage(ctx, m) })
	}
	upErr := make(chan error, 1)
	go func() { upErr <- r.fromUpstream(ctx) }()
	clientErr := r.fromClient(ctx)

	// The client side ended: close the upstream (a child process gets its
	// shutdown sequence) and wait for the upstream loop to drain.
	cancel()
	r.upstream.Close()
	err := <-upErr
	r.stopNotes()
	r.failPending(jsonrpc.CodeSessionClosed, deny.RuleEnded, "session closed")
	r.relists.Wait() // closed is set: no re-list starts any more
	r.holds.Wait()   // ctx is cancelled: held calls stop waiting for a person
	r.client.Close()
	r.failAsked(context.WithoutCancel(ctx))
	r.mu.Lock()
	opened := r.opened
	r.mu.Unlock()
	if sr, ok := r.recorder.(SessionRecorder); ok && opened {
		sr.SessionEnded(context.WithoutCancel(ctx), r.upstreamName, r.session)
	}
	if clientErr != nil {
		return clientErr
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, transport.ErrClosed) {
		return err
	}
	return nil
}

// fromClient relays client messages to the upstream until the client ends.
func (r *Relay) fromClient(ctx context.Context) error {
	for {
		msg, err := r.client.Read(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, transport.ErrClosed) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		r.clientMessage(ctx, msg)
	}
}

// clientMessage relays one message from the client.
func (r *Relay) clientMessage(ctx context.Context, msg *jsonrpc.Message) {
	if msg.Kind == jsonrpc.KindRequest {
		r.busy.Add(1) // until it is pending, held or answered
		defer r.busy.Add(-1)
	}
	switch {
	case msg.Kind == jsonrpc.KindResponse:
		r.relayClientResponse(ctx, msg)
	case msg.Kind == jsonrpc.KindRequest && r.pipeline.MayBlock():
		r.relayHeld(ctx, msg)
	default:
		r.relayClientCall(ctx, msg)
	}
}

// relayClientCall runs the pipeline on a client request or notification and
// forwards it if no stage refuses it.
func (r *Relay) relayClientCall(ctx context.Context, msg *jsonrpc.Message) {
	arrived := time.Now()
	call, denial := newCall(msg, r.upstreamName, r.session)
	if denial == nil && msg.Kind == jsonrpc.KindRequest && r.draining != nil && r.draining() {
		denial = shutdownDenial("it is not relayed")
	}
	if denial == nil {
		call.Principal = r.principal
		denial = r.lifecycle(msg)
	}
	if denial == nil && msg.Kind == jsonrpc.KindRequest && msg.Method == mcp.MethodToolsCall {
		denial = r.awaitRelist(ctx) // the pin stage must see the upstream's tools as they are now
	}
	if denial == nil {
		call.tools = r.tools
		if msg.Method == mcp.MethodInitialize {
			r.noteCapabilities(msg)
		}
		if r.canElicit() {
			call.Elicit = func(ctx context.Context, params []byte) (*jsonrpc.Message, error) {
				return r.ask(ctx, msg.ID, mcp.MethodElicitationCreate, params)
			}
		}
		denial = r.pipeline.Check(ctx, call)
		if denial != nil && errors.Is(context.Cause(ctx), errStopping) {
			denial = shutdownDenial("it was held and is not relayed") // a held call the drain time ran out on
			r.cut.Add(1)
		}
	}
	d := Decision{Upstream: r.upstreamName, Session: r.session, Kind: msg.Kind, Method: msg.Method,
		ID: msg.ID, Direction: "client", Denial: denial, Msg: msg, Arrived: arrived}
	if call != nil {
		d.Tool, d.Actor, d.ParamsHash, d.JTI, d.Approver = call.Tool, call.Subject, call.ParamsHash, call.JTI, call.Approver
		d.Approval, d.Held, d.Decided = call.Approval, call.Held, call.Decided
		if d.ParamsHash == "" { // a stage hashed the arguments: the record need not again
			d.ParamsHash = call.hashIfKnown()
		}
		if d.Actor == "" { // no token: the record names the authenticated client
			d.Actor = r.principal
		}
		d.Arguments, d.Findings = call.Arguments, call.Findings
		if call.Forward != nil {
			d.Msg = call.Forward
		}
	}
	// warden's credentials never reach an upstream, whatever the message
	// and whether or not a stage looked at them (the wire contract,
	// docs/errors.md): a token sent along a call that needs none would
	// otherwise be handed to the server.
	d.Msg = d.Msg.WithoutWardenMeta()
	if denial == nil && msg.Kind == jsonrpc.KindRequest && !r.track(msg.ID, msg.Method, call) {
		denial = &Denial{Stage: "relay", Rule: deny.RuleDuplicateID, Code: jsonrpc.CodeInvalidRequest,
			Reason: "request id " + msg.ID.Raw() + " is already in use by a pending request"}
		d.Denial = denial
	}
	if !r.keep(ctx, &d) && denial == nil {
		// No record, no call: refuse what would have been forwarded.
		if msg.Kind == jsonrpc.KindRequest {
			r.untrack(msg.ID)
		}
		denial = &Denial{Stage: "audit", Rule: deny.RuleWrite, Reason: "the audit record of this message could not be written, so it is refused"}
	}
	if denial != nil {
		denial.AuditID = d.AuditID
		r.log.Info("refused", "decision", d, "reason", denial.Reason)
		// A cancelled request gets no answer; one cut by the gateway's
		// stop does (its context is cancelled with errStopping).
		if msg.Kind == jsonrpc.KindRequest && (ctx.Err() == nil || errors.Is(context.Cause(ctx), errStopping)) {
			r.writeClient(context.WithoutCancel(ctx), jsonrpc.NewErrorResponse(msg.ID, denial.Error()))
		}
		return
	}
	if msg.Method == mcp.NotificationCancelled {
		r.forgetCancelled(msg)
	}
	if d.Open != nil {
		r.setOpen(msg.ID, d.Open)
	}
	msg = d.Msg // the stages' and the recorder's rewrite, if any
	if err := r.upstream.Write(ctx, msg); err != nil {
		r.log.Warn("upstream write failed", "upstream", r.upstreamName, "err", err)
		if p, ok := r.untrackCall(msg.ID); ok && msg.Kind == jsonrpc.KindRequest {
			r.answerInstead(ctx, p, jsonrpc.CodeUpstreamUnavailable, "upstream", deny.RuleWrite,
				"upstream "+quote(r.upstreamName)+" is unavailable: "+err.Error())
		}
	}
}

// relayHeld runs relayClientCall for a request on its own goroutine, when a
// stage may hold it for a person: other messages of the session go on, and
// the client's notifications/cancelled for it releases the hold. The
// goroutine ends with the session: Run cancels ctx, which ends the wait,
// and waits for it before it returns, so that no held call is recorded
// after its session (and perhaps the audit log) is gone. A request read
// after the session ended is dropped: nobody is left to answer.
func (r *Relay) relayHeld(ctx context.Context, msg *jsonrpc.Message) {
	hctx, cancel := context.WithCancelCause(ctx)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		cancel(nil)
		return
	}
	if _, dup := r.holding[msg.ID.Raw()]; dup {
		r.mu.Unlock()
		cancel(nil)
		r.writeClient(ctx, jsonrpc.NewErrorResponse(msg.ID, (&Denial{Stage: "relay", Rule: deny.RuleDuplicateID,
			Code: jsonrpc.CodeInvalidRequest, Reason: "request id " + msg.ID.Raw() + " is already in use by a pending request"}).Error()))
		return
	}
	r.holding[msg.ID.Raw()] = cancel
	r.holds.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.holds.Done()
		defer func() {
			r.mu.Lock()
			delete(r.holding, msg.ID.Raw())
			r.mu.Unlock()
			cancel(nil)
		}()
		r.relayClientCall(hctx, msg)
	}()
}

// relayClientResponse forwards the client's answer to a request the upstream
// made. An answer to a question the upstream never asked is dropped.
func (r *Relay) relayClientResponse(ctx context.Context, msg *jsonrpc.Message) {
	r.mu.Lock()
	if reply, mine := r.own[msg.ID.Raw()]; mine {
		delete(r.own, msg.ID.Raw())
		r.mu.Unlock()
		reply <- msg // buffered: the asker may have given up
		return
	}
	a, ok := r.asked[msg.ID.Raw()]
	delete(r.asked, msg.ID.Raw())
	r.mu.Unlock()
	d := Decision{Upstream: r.upstreamName, Session: r.session, Kind: msg.Kind, ID: msg.ID, Direction: "client", Msg: msg, Open: a.open}
	if !ok {
		d.Denial = &Denial{Stage: "relay", Rule: deny.RuleUnsolicitedResponse,
			Reason: "response to id " + msg.ID.String() + ", which the upstream did not ask"}
		r.keep(ctx, &d)
		r.log.Warn("dropped", "decision", d, "reason", d.Denial.Reason)
		return
	}
	if !r.keep(ctx, &d) {
		return // no record: the answer does not go through
	}
	if err := r.upstream.Write(ctx, msg); err != nil {
		r.log.Warn("upstream write failed", "upstream", r.upstreamName, "err", err)
	}
}

// fromUpstream relays upstream messages to the client until the upstream ends.
func (r *Relay) fromUpstream(ctx context.Context) error {
	for {
		msg, err := r.upstream.Read(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.flushNotes(ctx) // what the upstream sent before it ended reaches the client first
			}
			switch {
			case ctx.Err() != nil:
			case errors.Is(err, transport.ErrSessionLost):
				// An HTTP upstream forgot the session (it restarted, or
				// expired it). The client must start again: an HTTP
				// client is told so by 404 on its session (SessionLoser),
				// a stdio client by this error, and then the end of the
				// session.
				reason := "upstream " + quote(r.upstreamName) + " ended the session (it answered HTTP 404 to the session's id): start a new session"
				err = fmt.Errorf("upstream %s ended the session: %w", quote(r.upstreamName), err)
				r.log.Warn("upstream lost the session", "upstream", r.upstreamName, "session", r.session)
				if l, ok := r.client.(transport.SessionLoser); ok {
					l.LoseSession()
				}
				r.failPending(jsonrpc.CodeUpstreamUnavailable, deny.RuleSessionExpired, reason)
				r.client.Close()
			default:
				// The upstream ended on its own: it crashed or exited.
				status := exitStatus(r.upstream)
				err = fmt.Errorf("upstream %s ended the session%s: %w", quote(r.upstreamName), status, err)
				r.log.Warn("upstream ended", "upstream", r.upstreamName, "err", err)
				r.failPending(jsonrpc.CodeUpstreamUnavailable, deny.RuleEnded, "upstream "+quote(r.upstreamName)+" ended the session"+status)
				r.client.Close()
			}
			return err
		}
		r.upstreamMessage(ctx, msg)
	}
}

// upstreamMessage relays one message from the upstream.
func (r *Relay) upstreamMessage(ctx context.Context, msg *jsonrpc.Message) {
	d := Decision{Upstream: r.upstreamName, Session: r.session, Kind: msg.Kind, Method: msg.Method,
		ID: msg.ID, Direction: "upstream", Msg: msg, Actor: r.principal}
	if msg.Kind == jsonrpc.KindNotification && msg.Method != mcp.NotificationToolsListChanged {
		if r.queueNote(ctx, &d) {
			return // relayed once its record is kept (relay_notify.go)
		}
	} else {
		r.flushNotes(ctx) // the notifications before it go first
	}
	var answered pendingCall
	var checked chan struct{} // closed once warden has checked the tools a list_changed announced
	switch msg.Kind {
	case jsonrpc.KindResponse:
		if r.answerOwn(msg) {
			return // the answer to warden's own request: it stays in warden
		}
		p, ok := r.untrackCall(msg.ID)
		answered = p
		if !ok {
			d.Denial = &Denial{Stage: "relay", Rule: deny.RuleUnsolicitedResponse,
				Reason: "response to id " + msg.ID.String() + ", which the client did not send or no longer waits for"}
			r.keep(ctx, &d)
			r.log.Warn("dropped", "decision", d, "reason", d.Denial.Reason)
			return
		}
		method := p.method
		d.Method, d.Open = method, p.open
		if method == mcp.MethodInitialize && msg.Result != nil {
			r.mu.Lock()
			r.ready, r.opened = true, true
			r.mu.Unlock()
			r.showUpstreamSession()
		}
		if r.results != nil {
			msg, d.Findings, d.Denial = r.results(ctx, r.upstreamName, r.session, method, p.tool, msg)
			d.Msg = msg
		}
		if method == mcp.MethodToolsList && msg.Result != nil && d.Denial == nil {
			r.listed(msg.Result)
		}
	case jsonrpc.KindRequest:
		// The upstream's own text on its way to the client's model or
		// person (sampling, elicitation) meets the response halves as its
		// answers do (Security.upstreamRequest).
		if r.results != nil {
			msg, d.Findings, d.Denial = r.results(ctx, r.upstreamName, r.session, msg.Method, "", msg)
			d.Msg = msg
		}
	case jsonrpc.KindNotification:
		if msg.Method == mcp.NotificationToolsListChanged {
			checked = r.toolsChanged(ctx) // before the client learns of it: its next tools/call waits
		}
	}
	if !r.keep(ctx, &d) {
		if checked != nil {
			r.announced()
		}
		if msg.Kind == jsonrpc.KindResponse { // the client still gets an answer: an error
			r.writeClient(ctx, jsonrpc.NewErrorResponse(msg.ID, jsonrpc.Detail{Stage: "audit", Rule: string(deny.RuleWrite)}.
				Errorf(jsonrpc.CodeDenied, "the audit record of the upstream's answer could not be written, so it is withheld")))
		}
		return
	}
	if msg.Kind == jsonrpc.KindRequest && d.Denial != nil {
		// Withheld: the client never sees it, and the upstream is told.
		r.log.Info("refused", "decision", d, "reason", d.Denial.Reason)
		d.Denial.AuditID = d.AuditID
		if err := r.upstream.Write(ctx, jsonrpc.NewErrorResponse(msg.ID, d.Denial.Error())); err != nil {
			r.log.Debug("could not refuse the upstream's request", "err", err)
		}
		return
	}
	if msg.Kind == jsonrpc.KindRequest {
		// Asked once it is on record, before the client can answer; sent
		// as the Recorder left it (with warden's trace context).
		r.noteAsked(ctx, &d)
		msg = d.Msg
	}
	if r.answers != nil && msg.Kind == jsonrpc.KindResponse && msg.Result != nil && d.Denial == nil {
		r.answers(ctx, Answer{Upstream: r.upstreamName, Session: r.session, Principal: r.principal,
			Method: d.Method, Tool: answered.tool, Level: answered.level, Arguments: answered.args,
			Result: msg.Result, AuditID: d.AuditID, Approval: answered.approv})
	}
	if checked != nil {
		go r.announce(ctx, checked, msg)
		return
	}
	r.writeClient(ctx, msg)
}

// noteAsked records an upstream request that is about to reach the
// client, with its open operation. An open operation that will get no
// answer through the relay is closed as unanswered: the request's own when
// the session is over already, the earlier question's when the upstream
// reuses the id of one still unanswered.
func (r *Relay) noteAsked(ctx context.Context, d *Decision) {
	a := askedCall{id: d.ID, method: d.Method, open: d.Open}
	r.mu.Lock()
	closed := r.closed
	prev, dup := r.asked[d.ID.Raw()]
	if !closed {
		r.asked[d.ID.Raw()] = a
	}
	r.mu.Unlock()
	switch {
	case closed:
		r.unanswered(ctx, a, jsonrpc.CodeSessionClosed, "the session ended before the client answered")
	case dup:
		r.unanswered(ctx, prev, jsonrpc.CodeInvalidRequest, "the upstream asked again with the same id before the client answered")
	}
}

// failAsked closes the open operation of every upstream request the client
// has not answered: the session ended first. A later answer is dropped.
func (r *Relay) failAsked(ctx context.Context) {
	r.mu.Lock()
	asked := make([]askedCall, 0, len(r.asked))
	for _, a := range r.asked {
		asked = append(asked, a)
	}
	clear(r.asked)
	r.closed = true
	r.mu.Unlock()
	for _, a := range asked {
		r.unanswered(ctx, a, jsonrpc.CodeSessionClosed, "the session ended before the client answered")
	}
}

// unanswered has the Recorder close the open operation of an upstream
// request that will get no answer through the relay: the Decision is the
// client's answer as it would have been, with warden's error in its place
// (nothing is sent).
func (r *Relay) unanswered(ctx context.Context, a askedCall, code int64, reason string) {
	ur, ok := r.recorder.(UnansweredRecorder)
	if !ok || a.open == nil {
		return
	}
	ur.Unanswered(ctx, &Decision{Upstream: r.upstreamName, Session: r.session, Kind: jsonrpc.KindResponse,
		Method: a.method, ID: a.id, Direction: "client", Open: a.open,
		Msg: jsonrpc.NewErrorResponse(a.id, &jsonrpc.Error{Code: code, Message: reason})})
}

// track records a pending client request; false if the id is already pending.
func (r *Relay) track(id jsonrpc.ID, method string, c *Call) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	if _, dup := r.pending[id.Raw()]; dup {
		return false
	}
	if _, mine := r.ownUp[id.Raw()]; mine {
		return false
	}
	// Held in the map by value (120 bytes, under the map's 128 for
	// values kept in place): no allocation per request.
	p := pendingCall{id: id, method: method, tool: c.Tool, level: c.Level, args: c.Arguments, approv: c.ApprovalID}
	if r.timeout > 0 {
		p.due = time.Since(r.born) + r.timeout
		r.armExpiry()
	}
	r.pending[id.Raw()] = p
	return true
}

// untrack removes a pending client request and returns its method; ok is
// false if it was not pending.
func (r *Relay) untrack(id jsonrpc.ID) (method string, ok bool) {
	p, ok := r.untrackCall(id)
	return p.method, ok
}

// untrackCall removes a pending client request and returns it.
func (r *Relay) untrackCall(id jsonrpc.ID) (pendingCall, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.pending[id.Raw()]
	if !ok {
		return pendingCall{}, false
	}
	delete(r.pending, id.Raw())
	return p, true
}

// setOpen remembers the recorder's open operation of a pending request.
func (r *Relay) setOpen(id jsonrpc.ID, open any) {
	r.mu.Lock()
	if p, ok := r.pending[id.Raw()]; ok {
		p.open = open
		r.pending[id.Raw()] = p
	}
	r.mu.Unlock()
}

// expire answers a request the upstream did not answer in time, and tells the
// upstream to stop working on it.
func (r *Relay) expire(id jsonrpc.ID) {
	p, ok := r.untrackCall(id)
	if !ok {
		return
	}
	ctx := context.Background()
	r.log.Warn("request timed out", "upstream", r.upstreamName, "id", id.Raw(), "timeout", r.timeout)
	msg := "upstream " + quote(r.upstreamName) + " did not answer within " + r.timeout.String()
	if d, ok := r.upstream.(transport.Discarder); ok {
		// Its answer may have been among what it sent invalid.
		if n, last := d.Discarded(); n > 0 {
			msg += fmt.Sprintf("; meanwhile it sent %d message(s) warden could not validate, dropped unrelayed (last: %s)", n, last)
		}
	}
	r.answerInstead(ctx, p, jsonrpc.CodeTimeout, "upstream", deny.RuleTimeout, msg)
	cancel := jsonrpc.NewNotification(mcp.NotificationCancelled,
		[]byte(`{"requestId":`+id.Raw()+`,"reason":"warden: request timed out"}`))
	if err := r.upstream.Write(ctx, cancel); err != nil {
		r.log.Debug("could not send cancellation", "err", err)
	}
}

// answerInstead answers a pending client request with warden's error in
// the upstream's place: the upstream did not answer in time, could not be
// written to, or its session ended. The answer is kept like the upstream's
// would have been, so the request's span ends and the audit log shows how
// the call ended (decision error, with the stage and rule). It is sent even
// if it could not be kept: it carries nothing of the upstream's, and the
// client would otherwise wait for an answer that never comes.
func (r *Relay) answerInstead(ctx context.Context, p pendingCall, code int64, stage string, rule deny.Rule, reason string) {
	d := Decision{Upstream: r.upstreamName, Session: r.session, Kind: jsonrpc.KindResponse, Method: p.method,
		ID: p.id, Direction: "warden", Actor: r.principal, Open: p.open,
		Failure: &Denial{Stage: stage, Rule: rule, Reason: reason}}
	d.Msg = jsonrpc.NewErrorResponse(p.id, jsonrpc.Detail{Stage: stage, Rule: string(rule)}.Errorf(code, reason))
	if r.keep(ctx, &d) && d.AuditID != "" {
		d.Msg = jsonrpc.NewErrorResponse(p.id, jsonrpc.Detail{Stage: stage, Rule: string(rule), AuditID: d.AuditID}.Errorf(code, reason))
	}
	r.writeClient(ctx, d.Msg)
}

// endCancelled ends the open operation of a request the client cancelled:
// no answer goes to the client, so there is nothing to audit, but its span
// ends, with the cancellation as its error.
func (r *Relay) endCancelled(ctx context.Context, p pendingCall) {
	ur, ok := r.recorder.(UnansweredRecorder)
	if !ok || p.open == nil {
		return
	}
	ur.Unanswered(ctx, &Decision{Upstream: r.upstreamName, Session: r.session, Kind: jsonrpc.KindResponse,
		Method: p.method, ID: p.id, Direction: "warden", Open: p.open,
		Msg: jsonrpc.NewErrorResponse(p.id, &jsonrpc.Error{Code: jsonrpc.CodeRequestCancelled, Message: "the client cancelled the request"})})
}

// forgetCancelled stops waiting for a request the client cancelled: the
// upstream may still answer, and that answer is then dropped.
func (r *Relay) forgetCancelled(msg *jsonrpc.Message) {
	raw, ok := jsonrpc.Lookup(msg.Params, "requestId")
	if !ok {
		return
	}
	id := jsonrpc.IDFromRaw(raw)
	r.mu.Lock()
	if cancel := r.holding[id.Raw()]; cancel != nil {
		cancel(nil) // a held call: stop waiting for its approval
	}
	r.mu.Unlock()
	if p, ok := r.untrackCall(id); ok {
		r.endCancelled(context.Background(), p)
	}
}

// failPending answers every pending client request with an error of stage
// upstream and the given rule, and stops accepting new ones.
func (r *Relay) failPending(code int64, rule deny.Rule, reason string) {
	r.mu.Lock()
	pending := make([]pendingCall, 0, len(r.pending))
	for _, p := range r.pending {
		pending = append(pending, p)
	}
	clear(r.pending)
	r.stopExpiry()
	r.closed = true
	r.mu.Unlock()
	for _, p := range pending {
		r.answerInstead(context.Background(), p, code, "upstream", rule, reason)
	}
}

func (r *Relay) writeClient(ctx context.Context, msg *jsonrpc.Message) {
	if err := r.client.Write(ctx, msg); err != nil && !errors.Is(err, transport.ErrClosed) {
		r.log.Debug("client write failed", "err", err)
	}
}

// exitStatus describes how a child-process upstream exited, if it has.
func exitStatus(c transport.Conn) string {
	p, ok := c.(interface{ ExitCode() int })
	if !ok {
		return ""
	}
	// Stdout closes a moment before the process is reaped.
	for range 20 {
		if code := p.ExitCode(); code >= 0 {
			return fmt.Sprintf(" (its process exited with status %d)", code)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return ""
}

func (r *Relay) emit(d Decision) {
	if r.observe != nil {
		r.observe(d)
	}
}

// keep shows d to Observe and has the Recorder keep it, before the message
// it describes (or its refusal) leaves the gateway. The record is written
// even when the request's context is cancelled. false means the Recorder
// failed: the caller must not let the message through.
//
// The Recorder is given a copy of d on the heap, and what it sets there
// (AuditID, Open, Msg) is copied back: a Recorder may keep the pointer
// (an operation's span), so what it gets must outlive the call, but
// without a Recorder the Decision stays on the relaying goroutine's
// stack, which saves an allocation of the Decision per message relayed.
func (r *Relay) keep(ctx context.Context, d *Decision) bool {
	r.emit(*d)
	if r.recorder == nil {
		return true
	}
	rec := new(Decision)
	*rec = *d
	err := r.recorder.Record(context.WithoutCancel(ctx), rec)
	*d = *rec
	if err != nil {
		r.log.Error("the record of a message could not be kept; it does not go through", "decision", *d, "err", err)
		return false
	}
	return true
}

// showUpstreamSession shows the client the upstream's own view of the
// session once initialize is answered: an upstream that keeps no session
// (a stateless streamable-HTTP server) is not made to look stateful, so the
// client gets no session id of warden's (transport.SessionlessView).
func (r *Relay) showUpstreamSession() {
	s, ok := r.upstream.(transport.Sessionless)
	if !ok {
		return
	}
	none := s.Sessionless()
	if none {
		if v, ok := r.client.(transport.SessionlessView); ok {
			v.ShowSessionless()
		}
	}
	if r.onInitialized != nil {
		r.onInitialized(none)
	}
}
