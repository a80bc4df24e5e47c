package gateway

// The hot path of a tool call, top to bottom. The relay (relay.go) moves
// messages; every check is a half of a stage in StageTable, below, run in
// the table's order:
//
//	client tools/call ─► relayClientCall: newCall (the one decoded view:
//	                     tool, arguments; Call.Hashed hashes them once)
//	  request halves, Pipeline.Check, top to bottom; the first refusal stops:
//	    method-policy ─► tool-policy ─► pin ─► security ─► classify ─► taint
//	    ─► consent (no token: a mandate's, or a person's approval)
//	    ─► zero-trust (verify INV-1..3, 5, 6) ─► revocation (P8)
//	  commit halves, once all passed: zero-trust consumes the token (INV-4)
//	  ─► the Recorder keeps the decision ─► upstream gets Call.Forward
//	upstream answer ─► upstreamMessage: the pending call it answers
//	  response halves, Pipeline.Result, top to bottom: pin (filter
//	    tools/list) ─► security (inspect, withhold) ─► tools (the tool
//	    index learns what passed)
//	  ─► the Recorder keeps it ─► Answered halves: taint (fingerprint the
//	     answer), consent (the approval queue told the call ran) ─► client
//
// The relay's own refusals (stages session, relay, audit, upstream: the
// lifecycle, duplicate and unsolicited ids, a record that cannot be kept,
// an upstream that fails) are about the session, not the call, and stay in
// relay*.go.

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// A Stage is one named check of the request pipeline. Stages run in order on
// every request and notification a client sends; the first denial stops the
// message, and the client gets a JSON-RPC error whose data names the stage
// and the rule. A stage that cannot decide denies (fail-secure).
type Stage interface {
	// Name is the stable identifier that denials, logs and the audit log use.
	Name() string
	// Check returns nil to let c pass, or the reason to refuse it. It must be
	// safe for concurrent use: one pipeline serves every session of an
	// upstream.
	Check(ctx context.Context, c *Call) *Denial
}

// A CommitStage has a second request half, Commit, for what cannot be
// undone: it runs only once every stage's Check let the call pass, in the
// table's order, and may still refuse it. The zero-trust stage consumes the
// token there (INV-4), so that no later stage's refusal (revocation) burns
// a token that was never used.
type CommitStage interface {
	Stage
	Commit(ctx context.Context, c *Call) *Denial
}

// Call is what the pipeline sees of one client message. The relay sets
// the fields above Forward; each field below is written by one stage (or
// two with the same value, as noted) and read by the later ones and the
// record. ARCHITECTURE.md's "Pipeline" section has the same list.
type Call struct {
	Msg      *jsonrpc.Message
	Upstream string // name of the upstream the session is bound to
	Session  string // session id; "" for stdio and stateless sessions
	// Principal is the session's authenticated client (AASM P1); "" when
	// the listener does not authenticate, and on stdio.
	Principal string

	// Tool is the decoded params.name of a tools/call request ("" otherwise),
	// and Arguments the raw JSON of its params.arguments (nil when absent).
	Tool      string
	Arguments []byte

	// Forward, set by the zero-trust stage's commit half, is the message
	// sent upstream in place of Msg (canonical arguments, without warden's
	// _meta members). Stages still see Msg.
	Forward *jsonrpc.Message
	// Subject is the principal the call acts for (ZeroTrust.Subject), set
	// by the consent stage when it issues a token and by the zero-trust
	// stage; ParamsHash is the parameters_hash zero-trust verified, JTI the
	// token id it verified (and consumed, once the call passed).
	Subject, ParamsHash, JTI string
	// Set by the consent stage on a held call: who decided (approved or
	// denied it), and Approval saying so in words ("approved by NAME:
	// REASON (ID)"; a denial says it in its Denial).
	Approver, Approval string
	// ApprovalID is the approval queue's id of a held call that was
	// approved, "" otherwise: its answer tells the queue the call ran
	// (Consent.Answered). Set by the consent stage.
	ApprovalID string
	// Held and Decided are when the consent stage held the call for a
	// person's decision and when the decision (or the timeout) came; zero
	// when the call was not held.
	Held, Decided time.Time

	// Findings are the security processor's findings on the call (set by
	// the security stage), and NeedsApproval says one of them asks for a
	// person's approval (set by the security and taint stages): the call
	// then needs a token, and the consent stage holds it.
	Findings      []secproc.Finding
	NeedsApproval bool

	// Level is the call's data classification (1 most sensitive .. 5), set
	// by the classify stage; 0 means unclassified. ClassRule names the rule
	// that set it.
	Level     int
	ClassRule string

	// tools looks up what the upstream's tools/list said about a tool.
	tools ToolInfo

	// The call's canonical arguments and parameters_hash, computed at most
	// once (Hashed): set by the first stage that needs them.
	hashed    bool
	hash      string
	canonical []byte
	hashErr   error

	// issued is the token warden issued for a call that brought none (a
	// mandate, an approval): written by the consent stage, verified by the
	// zero-trust stage like a presented one.
	issued string
	// verified is the token the zero-trust stage verified: the revocation
	// stage checks it, and zero-trust's commit half consumes it.
	verified *verifiedToken

	// Elicit, when the client declared form elicitation, asks the client's
	// user: it sends elicitation/create with params (on the stream of this
	// call) and returns the client's answer. nil when the client cannot be
	// asked.
	Elicit func(ctx context.Context, params []byte) (*jsonrpc.Message, error)
}

// newCall prepares the view of msg that stages share. A tools/call whose name
// is missing or not a string is refused here rather than relayed, because no
// tool policy could be applied to it.
func newCall(msg *jsonrpc.Message, upstream, session string) (*Call, *Denial) {
	c := &Call{Msg: msg, Upstream: upstream, Session: session}
	if msg.Method != mcp.MethodToolsCall || msg.Kind != jsonrpc.KindRequest {
		return c, nil
	}
	raw, ok := jsonrpc.Lookup(msg.Params, "name")
	if !ok {
		return nil, &Denial{Stage: "wire", Rule: deny.RuleToolName, Code: jsonrpc.CodeInvalidParams,
			Reason: "tools/call without params.name"}
	}
	name, ok := jsonrpc.String(raw)
	if !ok || name == "" {
		return nil, &Denial{Stage: "wire", Rule: deny.RuleToolName, Code: jsonrpc.CodeInvalidParams,
			Reason: "tools/call params.name must be a non-empty string"}
	}
	c.Tool = name
	c.Arguments, _ = jsonrpc.Lookup(msg.Params, "arguments")
	return c, nil
}

// paramsHash is zerotrust.ParamsHash; a test counts its calls.
var paramsHash = zerotrust.ParamsHash

// Hashed returns the parameters_hash of the call's arguments and their
// canonical (RFC 8785) form, as zerotrust.ParamsHash gives them. They are
// computed once per call, by the first stage that asks: the zero-trust
// stage, a mandate's match, an approval, the authorization API and the
// record all share that one hashing. A Call belongs to the goroutine
// relaying it, so Hashed needs no lock.
func (c *Call) Hashed() (hash string, canonical []byte, err error) {
	if !c.hashed {
		c.hash, c.canonical, c.hashErr = paramsHash(c.Arguments)
		c.hashed = true
	}
	return c.hash, c.canonical, c.hashErr
}

// hashIfKnown returns the parameters_hash if a stage computed it, else "".
func (c *Call) hashIfKnown() string {
	if !c.hashed || c.hashErr != nil {
		return ""
	}
	return c.hash
}

// Annotations returns the annotations the upstream's tools/list declared
// for c.Tool, or nil if none were seen. They are the server's own hints,
// not facts: a malicious server can declare a destructive tool read-only.
func (c *Call) Annotations() map[string]any {
	if c.tools.Annotations == nil || c.Tool == "" {
		return nil
	}
	return c.tools.Annotations(c.Tool)
}

// Description returns the description the upstream's tools/list gave
// c.Tool, or "" if none was seen.
func (c *Call) Description() string {
	if c.tools.Description == nil || c.Tool == "" {
		return ""
	}
	return c.tools.Description(c.Tool)
}

// ToolInfo looks up what an upstream's tools/list answers said about its
// tools. Either function may be nil.
type ToolInfo struct {
	Annotations func(tool string) map[string]any
	Description func(tool string) string
	// SchemaHash is zerotrust.SchemaHash of the tool's inputSchema, for
	// hybrid tokens (binding mode C); "" when unknown.
	SchemaHash func(tool string) string
	// Variant returns the listed tool that tool, whose toolKey is key,
	// only looks like (same key, another name), if there is one.
	Variant func(tool, key string) (listed string, ok bool)
}

// SchemaHash returns the hash of c.Tool's inputSchema as the upstream
// declared it, or "" if none was seen.
func (c *Call) SchemaHash() string {
	if c.tools.SchemaHash == nil || c.Tool == "" {
		return ""
	}
	return c.tools.SchemaHash(c.Tool)
}

// Denial is a stage's refusal of a call: warden's one refusal type, shared
// with the A2A and AG-UI relays (internal/deny). Its Rule is a deny.Rule
// constant, or a rule that is data (a policy pattern, a detector's name)
// converted with deny.Rule.
type Denial = deny.Denial

// A stage's response half. A stage that implements ResultStage also sees
// the upstream's answer to each client request before it is recorded and
// sent, and may replace it, add findings or withhold it (a Denial); one
// that implements AnswerStage sees each successful answer once it is on
// record, before the client gets it (it may not change it); one that
// implements RecheckStage checks the tools/list answers warden asks the
// upstream for itself, after notifications/tools/list_changed
// (relay_relist.go). Halves run in the table's order, like the request
// halves; the first that withholds an answer stops the others.
type (
	ResultStage interface {
		Stage
		Result(ctx context.Context, upstream, session, method, tool string, msg *jsonrpc.Message) (*jsonrpc.Message, []secproc.Finding, *Denial)
	}
	AnswerStage interface {
		Stage
		Answered(ctx context.Context, a Answer)
	}
	RecheckStage interface {
		Stage
		Recheck(ctx context.Context, upstream string, result []byte) error
	}
)

// StageTable is the order of the pipeline's stages: each upstream's
// pipeline has some of them, always in this order (NewPipeline refuses any
// other), each with its request half and, for some, a commit half or a
// response half. Request halves (Check) run top to bottom, then commit
// halves (Commit) top to bottom; response halves run top to bottom on the
// upstream's answer.
// ARCHITECTURE.md's stage table lists the same stages in the same order
// (TestArchitectureStageTable). The zero values stand for the types.
var StageTable = []Stage{
	MethodPolicy{}, // every request and notification: method allow/deny lists
	ToolPolicy{},   // tools/call: tool allow/deny lists, look-alike names
	Pins{},         // P2: unpinned tools refused; each answer: tools/list filtered; re-lists checked
	Security{},     // P4: the security processor on the request; each answer inspected
	Classify{},     // CEL classification: the call's level and tier
	Taint{},        // CS: copied answer text into sinks; each answer fingerprinted
	Consent{},      // P5: a token for a mandate or a person's approval; each answer: the approval queue told the call ran
	ZeroTrust{},    // INV-1..3, 5, 6 on the token; commit half: INV-4, consume it, forward canonical arguments
	Revocation{},   // P8: the verified token's jti, subject and session against the registry, before it is consumed
	Tools{},        // each tools/list answer, as the stages above let it through: the definitions the stages read (Call.Annotations, ...)
}

// stageRank is each table stage's position, by name.
var stageRank = func() map[string]int {
	m := make(map[string]int, len(StageTable))
	for i, s := range StageTable {
		m[s.Name()] = i
	}
	return m
}()

// Pipeline is an ordered list of stages. It is immutable after construction
// and shared by every session of one upstream.
type Pipeline struct {
	stages   []Stage
	commits  []CommitStage // the stages with a commit half, in order
	results  []ResultStage // the stages with a response half, in order
	answered []AnswerStage // the stages that see answers on record, in order
	recheck  RecheckStage  // the stage that checks warden's own re-lists, if any
	mayBlock bool          // a stage can wait for a person
}

// NewPipeline returns a pipeline running stages in the order given, which
// must be StageTable's for the stages it names (a stage of another name,
// as tests use, may come anywhere). It panics otherwise: the order is a
// security property (the zero-trust stage needs the classify stage's
// level, taint the tier), not a choice of the caller.
//
// A ZeroTrust stage brings the entries that share its configuration:
// consent before it (when it can issue tokens: mandates or approvals) and
// revocation after it (when it has a registry); see ZeroTrust.entries.
func NewPipeline(stages ...Stage) *Pipeline {
	entries := make([]Stage, 0, len(stages)+2)
	for _, s := range stages {
		if g, ok := s.(interface{ entries() []Stage }); ok {
			entries = append(entries, g.entries()...)
		} else {
			entries = append(entries, s)
		}
	}
	return pipelineOf(entries)
}

// pipelineOf returns the pipeline of these table entries, as they are. It
// panics when one is out of StageTable's order, or there twice.
func pipelineOf(stages []Stage) *Pipeline {
	p := &Pipeline{stages: stages}
	last := -1
	for _, s := range p.stages {
		if r, ok := stageRank[s.Name()]; ok {
			if r <= last {
				panic("gateway: stage " + s.Name() + " out of StageTable's order, or twice")
			}
			last = r
		}
		if b, ok := s.(interface{ MayBlock() bool }); ok && b.MayBlock() {
			p.mayBlock = true
		}
		if c, ok := s.(CommitStage); ok {
			p.commits = append(p.commits, c)
		}
		if r, ok := s.(ResultStage); ok {
			p.results = append(p.results, r)
		}
		if a, ok := s.(AnswerStage); ok {
			p.answered = append(p.answered, a)
		}
		if r, ok := s.(RecheckStage); ok && p.recheck == nil {
			p.recheck = r
		}
	}
	return p
}

// withTools returns p with the tools entry that keeps index up to date
// (Gateway.New gives each upstream's pipeline its own index).
func (p *Pipeline) withTools(index *toolIndex) *Pipeline {
	stages := make([]Stage, 0, len(p.stages)+1)
	for _, s := range p.stages {
		if _, ok := s.(Tools); !ok {
			stages = append(stages, s)
		}
	}
	return pipelineOf(append(stages, Tools{index: index}))
}

// MayBlock reports whether a stage can hold a call for a long time (an
// approval). The relay then checks each request on its own goroutine, so
// that a held call does not stall the session.
func (p *Pipeline) MayBlock() bool { return p.mayBlock }

// Stages returns the names of the pipeline's stages, in order.
func (p *Pipeline) Stages() []string {
	names := make([]string, len(p.stages))
	for i, s := range p.stages {
		names[i] = s.Name()
	}
	return names
}

// Check runs every stage's request half on c, then, if none refused, every
// commit half, and returns the first denial, or nil.
func (p *Pipeline) Check(ctx context.Context, c *Call) *Denial {
	for _, s := range p.stages {
		if d := s.Check(ctx, c); d != nil {
			return named(d, s)
		}
	}
	for _, s := range p.commits {
		if d := s.Commit(ctx, c); d != nil {
			return named(d, s)
		}
	}
	return nil
}

// named gives d the name of the stage s that refused, unless s named a
// stage of its own.
func named(d *Denial, s Stage) *Denial {
	if d.Stage == "" {
		d.Stage = s.Name()
	}
	return d
}

// resultFilter returns the response halves as one ResultFilter, nil when
// no stage has one.
func (p *Pipeline) resultFilter() ResultFilter {
	if len(p.results) == 0 {
		return nil
	}
	return p.Result
}

// Result runs the response halves on an upstream's answer to a client
// request (method and tool are the request's): it returns the message to
// send instead (msg itself to let it pass), every finding, and the denial
// of the first stage that withheld the answer, which stops the others.
func (p *Pipeline) Result(ctx context.Context, upstream, session, method, tool string, msg *jsonrpc.Message) (*jsonrpc.Message, []secproc.Finding, *Denial) {
	var all []secproc.Finding
	for _, s := range p.results {
		var findings []secproc.Finding
		var d *Denial
		msg, findings, d = s.Result(ctx, upstream, session, method, tool, msg)
		all = append(all, findings...)
		if d != nil {
			if d.Stage == "" {
				d.Stage = s.Name()
			}
			return msg, all, d
		}
	}
	return msg, all, nil
}

// answersHook returns Answered, nil when no stage sees answers.
func (p *Pipeline) answersHook() func(context.Context, Answer) {
	if len(p.answered) == 0 {
		return nil
	}
	return p.Answered
}

// Answered shows a successful answer, on record, to every stage that sees
// answers.
func (p *Pipeline) Answered(ctx context.Context, a Answer) {
	for _, s := range p.answered {
		s.Answered(ctx, a)
	}
}

// rechecker returns the re-check of warden's own tools/list, nil if none.
func (p *Pipeline) rechecker() func(ctx context.Context, upstream string, result []byte) error {
	if p.recheck == nil {
		return nil
	}
	return p.recheck.Recheck
}

// Decision is what the gateway reports about every message it handled, for
// the demo, the logs and (later) the audit log and telemetry.
type Decision struct {
	Upstream string
	Session  string
	Kind     jsonrpc.Kind
	Method   string
	Tool     string
	ID       jsonrpc.ID
	// Direction is "client" for messages from the client to the upstream,
	// "upstream" for messages from the upstream to the client, and "warden"
	// for requests warden itself sends the client (elicitation, to ask the
	// user to approve a held call) or the upstream (tools/list, after
	// notifications/tools/list_changed), and for the error answers it gives
	// the client in the upstream's place (see Failure).
	Direction string
	// Denial is nil when the message was relayed.
	Denial *Denial
	// Failure, on an error answer that warden gave the client in the
	// upstream's place (Direction "warden"), says why: the upstream did not
	// answer in time, could not be written to, or its session ended.
	Failure *Denial

	// Msg is the message as it is about to leave (for an allowed client
	// request, what is forwarded: canonical arguments). A Recorder may
	// replace it (to add trace context); nothing else may modify it.
	Msg *jsonrpc.Message
	// For a tools/call: its raw arguments, and what the zero-trust stage
	// established (see Call).
	Arguments                        []byte
	Actor, ParamsHash, JTI, Approver string
	Approval                         string
	// Arrived is when the relay received a client's message; Held and
	// Decided are the call's (see Call). Telemetry starts the call's span
	// at Arrived, so that it covers the time the call was held.
	Arrived, Held, Decided time.Time
	// AuditID is set by a Recorder that wrote an audit record.
	AuditID string
	// Findings are the security processor's findings on the message.
	Findings []secproc.Finding
	// Open is the Recorder's state of an allowed request (its open span),
	// from the client or from the upstream (sampling, elicitation, roots):
	// set by the Recorder on the request, handed back with the response's
	// Decision.
	Open any
}

// A ResultFilter is the signature of ResultStage.Result: it sees an
// upstream's answer to a client request (method and tool are the
// request's) before it is recorded and sent, and returns the message to
// send instead (msg itself to let it pass), its findings, and the denial
// when it withheld the answer.
type ResultFilter func(ctx context.Context, upstream, session, method, tool string, msg *jsonrpc.Message) (*jsonrpc.Message, []secproc.Finding, *Denial)

// A Recorder keeps a record of every message the relay handles (the audit
// log, telemetry). Record is called before the message, or its refusal,
// leaves the gateway, from the goroutine relaying it; it must be safe for
// concurrent use. An error means the record could not be kept, and the
// relay does not let the message through: a call is refused, an upstream's
// answer is replaced by an error (fail-secure).
type Recorder interface {
	Record(ctx context.Context, d *Decision) error
}

// LogValue renders a decision for slog.
func (d Decision) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("upstream", d.Upstream),
		slog.String("direction", d.Direction),
		slog.String("kind", d.Kind.String()),
	}
	if d.Method != "" {
		attrs = append(attrs, slog.String("method", d.Method))
	}
	if d.Tool != "" {
		attrs = append(attrs, slog.String("tool", d.Tool))
	}
	if d.ID.IsValid() {
		attrs = append(attrs, slog.String("id", d.ID.Raw()))
	}
	if d.Session != "" {
		attrs = append(attrs, slog.String("session", d.Session))
	}
	if d.Denial != nil {
		attrs = append(attrs, slog.String("stage", d.Denial.Stage), slog.String("rule", string(d.Denial.Rule)))
		if d.Denial.Cause != "" {
			attrs = append(attrs, slog.String("cause", d.Denial.Cause))
		}
	}
	return slog.GroupValue(attrs...)
}
