package gateway

// Records is the gateway's Recorder: every message the relay handles
// becomes an audit record (written before the message leaves; a failed
// write stops it) and telemetry (a span, and OCSF events through the
// telemetry Recorder's sink).
//
//	client request ──► audit.Append ──► span Start (parent: params._meta.traceparent)
//	                                    └─► forwarded with _meta.traceparent of warden's span
//	upstream answer ─► audit.Append ──► span End (result or error)
//	upstream request ► audit.Append ──► span Start (sampling, elicitation, roots), _meta as above
//	client answer ───► audit.Append ──► span End (result, gen_ai.usage.* of a sampling result)
//	refusal, notification ─► audit.Append ─► span Record (start and end at once)
//	session end: unanswered upstream requests (Unanswered) ► span End (error)
//	             then SessionEnded ─────► span Record: server.disconnect
//
// Every tools/call, allowed or refused, is recorded with the parameters
// hash of its arguments: the zero-trust stage's when it hashed them, else
// computed here, once.
//
// A client request's span starts when the request arrived (Decision.Arrived),
// so a call held for approval spans the wait; its mcp.tool.approval events
// say when it was held and when, and by whom, it was decided. Every finding
// of the security processor, on the request and on its answer, is one
// aitf.security.threat_detected event on the span. A resources/read span
// names the resource as the upstream's resources/list answer did
// (resourceNames).

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/telemetry"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// Records keeps the audit log and telemetry of a gateway. Its exported
// fields are set before first use and never changed; it is safe for
// concurrent use (names, the one thing it learns, has its own lock).
type Records struct {
	Audit *audit.Log          // nil: no audit log
	Spans *telemetry.Recorder // nil: no spans
	// Propagate adds warden's span context to the params._meta of each
	// forwarded request (traceparent), so the upstream's spans join the
	// client's trace. The zero-trust parameters_hash covers arguments only,
	// so this changes no hash.
	Propagate bool
	// Transport is the client leg, as telemetry names it.
	Transport string
	// Transports are the upstream legs, by upstream name, as telemetry
	// names them (internal/assemble sets them from the configuration).
	Transports map[string]string
	// Metrics, if set, counts messages, denials and operation durations.
	Metrics *Metrics
	// URLs are the endpoints of the network upstreams, by upstream name,
	// as spans show them (aitf.mcp.server.url): scheme, host and path, never
	// the query, which may carry a key (internal/assemble sets them).
	URLs map[string]string

	// names are the resource names each session's upstream listed.
	names resourceNames
}

// A SessionRecorder is a Recorder that also records the end of a session.
// SessionEnded is to be called once per session whose initialize the
// upstream answered, after both of its connections have closed, so that
// every server.disconnect span follows a server.connect span. Relay.Run
// calls it.
type SessionRecorder interface {
	Recorder
	SessionEnded(ctx context.Context, upstream, session string)
}

// An UnansweredRecorder is a Recorder that also closes the record of a
// request that gets no answer through the relay: an upstream's (the session
// ended first, or the upstream asked again with the same id) or a client's
// that the client cancelled. Relay calls Unanswered once for each such
// request whose Record set Decision.Open, with d as the answer would have
// been (Open included) and, as Msg, an error response that stands for the
// answer; it is sent to no one, so it has no audit record.
type UnansweredRecorder interface {
	Recorder
	Unanswered(ctx context.Context, d *Decision)
}

// openCall is a forwarded request waiting for its answer: when it left,
// what the request's record said that the answer's record repeats, and its
// span (op and span are nil without spans).
type openCall struct {
	start                                  time.Time
	tool, actor, paramsHash, jti, approver string
	op                                     *telemetry.Operation
	span                                   *telemetry.Span
	findings                               []secproc.Finding // the request's, which the answer's join
}

// Record implements Recorder.
func (rs *Records) Record(ctx context.Context, d *Decision) error {
	return rs.Begin(ctx, d)()
}

// Begin implements PipelinedRecorder: the audit record is queued now, in
// order, and the rest (telemetry, metrics) is done by wait, once the
// record is durable.
func (rs *Records) Begin(ctx context.Context, d *Decision) (wait func() error) {
	params := rs.paramsHash(d)
	if rs.Audit == nil {
		return func() error { rs.finish(ctx, d, params, 0, ""); return nil }
	}
	appended := rs.Audit.Submit(ctx, auditRecord(d, params))
	return func() error {
		rec, err := appended()
		if err != nil {
			rs.withheld(d)
			return err
		}
		d.AuditID = strconv.FormatUint(rec.Seq, 10)
		rs.finish(ctx, d, params, rec.Seq, rec.Hash)
		return nil
	}
}

// finish records d's telemetry and metrics, after its audit record (seq,
// hash) if any.
func (rs *Records) finish(ctx context.Context, d *Decision, params string, seq uint64, hash string) {
	if d.Direction == "client" && d.Kind == jsonrpc.KindRequest && d.Denial == nil {
		d.Open = &openCall{start: time.Now(), tool: d.Tool, actor: d.Actor, paramsHash: params, jti: d.JTI, approver: d.Approver, findings: d.Findings}
	}
	if rs.Spans != nil {
		rs.span(ctx, d, params, seq, hash)
	}
	if rs.Metrics != nil {
		rs.Metrics.observe(d)
	}
}

// SessionEnded implements SessionRecorder: the seed's server.disconnect
// span. The session's end is no message, so it has no audit record.
func (rs *Records) SessionEnded(ctx context.Context, upstream, session string) {
	if rs.Spans == nil {
		return
	}
	rs.names.forget(upstream, session)
	rs.Spans.RecordOwned(ctx, &telemetry.Operation{Span: telemetry.SpanServerDisconnect, Upstream: upstream,
		Session: session, Transport: rs.Transport, ServerTransport: rs.Transports[upstream], UpstreamURL: rs.URLs[upstream], Start: time.Now()})
}

// Unanswered implements UnansweredRecorder: the request's span ends with
// d.Msg's error.
func (rs *Records) Unanswered(_ context.Context, d *Decision) {
	if o, ok := d.Open.(*openCall); ok && o.op != nil {
		o.op.SetResponse(d.Msg)
		rs.Spans.EndOwned(o.span, o.op)
	}
}

// withheld ends the span of the request d answers when the answer's audit
// record could not be written: the relay withholds the answer, so the
// request ends denied by the audit stage.
func (rs *Records) withheld(d *Decision) {
	o, ok := d.Open.(*openCall)
	if !ok || o.op == nil || d.Kind != jsonrpc.KindResponse {
		return
	}
	o.op.Denial = &telemetry.Denial{Stage: "audit", Rule: "write", Reason: "the audit record of the answer could not be written, so it is withheld"}
	rs.Spans.EndOwned(o.span, o.op)
}

// paramsHash returns the parameters hash of d's arguments when d is a
// client's tools/call: the one the zero-trust stage computed, if it ran,
// else zerotrust.ParamsHash of the arguments (hex SHA-256 of their JCS
// form; absent arguments hash as {}). "" for every other message, for
// arguments that cannot be hashed (not an object, a number beyond 2^53),
// and when there is nothing to record it in.
func (rs *Records) paramsHash(d *Decision) string {
	if d.ParamsHash != "" || d.Method != mcp.MethodToolsCall || d.Kind != jsonrpc.KindRequest ||
		d.Direction != "client" || d.Tool == "" || (rs.Audit == nil && rs.Spans == nil) {
		return d.ParamsHash
	}
	hash, _, err := zerotrust.ParamsHash(d.Arguments)
	if err != nil {
		return ""
	}
	return hash
}

// requestHash is the OWASP Agent Control Standard's request_hash of a
// client's tools/call: lowercase hex SHA-256 of the JCS form of its params
// as forwarded (the client's, less warden's own credentials in _meta;
// absent params hash as {}). "" for other messages, and for params that
// cannot be canonicalized (not an object, a number beyond ±2^53).
func requestHash(d *Decision) string {
	if d.Method != mcp.MethodToolsCall || d.Kind != jsonrpc.KindRequest || d.Direction != "client" || d.Msg == nil {
		return ""
	}
	hash, _, err := zerotrust.ParamsHash(d.Msg.Params)
	if err != nil {
		return ""
	}
	return hash
}

// auditRecord is the audit log's view of d, whose arguments hash to params.
func auditRecord(d *Decision, params string) audit.Record {
	r := audit.Record{
		Time: time.Now(), Actor: d.Actor, Session: d.Session, Upstream: d.Upstream, Method: d.Method,
		RequestID: d.ID.Raw(), Tool: d.Tool, ParamsHash: params, Decision: audit.Allow,
		JTI: d.JTI, Approver: d.Approver, Direction: d.Direction, RequestHash: requestHash(d),
	}
	switch {
	case d.Denial != nil:
		r.Decision, r.Stage, r.Rule, r.Invariant, r.Reason = audit.Deny, d.Denial.Stage, string(d.Denial.Rule), d.Denial.Invariant, d.Denial.Reason
		if d.Denial.Cause != "" { // what the client was not told
			r.Reason += " (cause: " + d.Denial.Cause + ")"
		}
	case d.Failure != nil:
		r.Decision, r.Stage, r.Rule, r.Reason = audit.Error, d.Failure.Stage, string(d.Failure.Rule), d.Failure.Reason
	case d.Msg != nil && d.Msg.Error != nil:
		r.Decision = audit.Error
	default:
		r.Reason = d.Approval // who approved a held call, and why
	}
	if o, ok := d.Open.(*openCall); ok && d.Direction != "client" {
		// The answer's record names the call it answers.
		r.Tool, r.Actor, r.ParamsHash, r.JTI, r.Approver = o.tool, o.actor, o.paramsHash, o.jti, o.approver
	}
	return r
}

// span turns d into telemetry: a relayed request, the client's or the
// upstream's, opens a span that its answer closes; everything else is
// recorded at once. Each operation is made here and handed over to the
// Recorder when its span ends (EndOwned, RecordOwned: no copy on the
// call's path); nothing reads it afterwards.
func (rs *Records) span(ctx context.Context, d *Decision, params string, seq uint64, hash string) {
	switch {
	case d.Direction == "client" && d.Kind == jsonrpc.KindRequest && d.Denial == nil:
		o := d.Open.(*openCall)
		o.op, o.span = rs.start(ctx, d, params, seq, hash)
	case d.Kind == jsonrpc.KindResponse:
		// The upstream's answer to a client request (or warden's in its
		// place), or the client's to an upstream request (sampling,
		// elicitation, roots).
		o, ok := d.Open.(*openCall)
		if !ok || o.op == nil {
			return // an answer to nothing: recorded in the audit log only
		}
		o.op.SetResponse(d.Msg)
		if dn := d.Denial; dn != nil {
			o.op.Denial = telemetryDenial(dn)
		}
		if o.op.Method == "resources/list" && d.Msg.Error == nil {
			rs.names.learn(d.Upstream, d.Session, d.Msg.Result)
		}
		addFindings(o.op, o.findings, d.Findings)
		rs.Spans.EndOwned(o.span, o.op)
	case d.Direction == "upstream" && d.Kind == jsonrpc.KindRequest && d.Denial == nil:
		o := &openCall{start: time.Now(), findings: d.Findings}
		o.op, o.span = rs.start(ctx, d, params, seq, hash)
		d.Open = o
	default:
		op := rs.operation(d, params)
		op.AuditSeq, op.AuditHash = seq, hash
		rs.Spans.RecordOwned(ctx, op)
	}
}

// start opens the span of a relayed request and, with Propagate, rewrites
// the request's params._meta with the span's trace context, so that the
// receiver's spans join the trace.
func (rs *Records) start(ctx context.Context, d *Decision, params string, seq uint64, hash string) (*telemetry.Operation, *telemetry.Span) {
	op := rs.operation(d, params)
	op.AuditSeq, op.AuditHash = seq, hash
	sp := rs.Spans.StartSpan(ctx, op)
	if rs.Propagate && d.Msg != nil {
		if params, err := telemetry.InjectMeta(d.Msg.Params, sp.Context()); err == nil {
			d.Msg = d.Msg.WithParams(params)
		}
	}
	return op, sp
}

// operation is the telemetry view of d, whose arguments hash to params.
func (rs *Records) operation(d *Decision, params string) *telemetry.Operation {
	op := &telemetry.Operation{
		Method: d.Method, FromUpstream: d.Direction != "client", Notification: d.Kind == jsonrpc.KindNotification,
		RequestID: d.ID.Raw(), Session: d.Session, Transport: rs.Transport, ServerTransport: rs.Transports[d.Upstream], Upstream: d.Upstream,
		UpstreamURL: rs.URLs[d.Upstream], Actor: d.Actor, Tool: d.Tool, Arguments: d.Arguments,
		ParamsHash: params, JTI: d.JTI, Approver: d.Approver, Start: d.Arrived,
		Held: d.Held, Decided: d.Decided,
	}
	if op.Start.IsZero() {
		op.Start = time.Now()
	}
	if d.Msg != nil {
		op.Params = d.Msg.Params
	}
	if d.Method == mcp.MethodResourcesRead && d.Direction == "client" {
		op.ResourceName = rs.names.name(d.Upstream, d.Session, lookupString(op.Params, "uri"))
	}
	if dn := d.Denial; dn != nil {
		op.Denial = telemetryDenial(dn)
	}
	op.Approval, op.Approver = approvalStatus(d)
	addFindings(op, nil, d.Findings)
	return op
}

// approvalStatus is the approval status of d's call and who decided: a
// call held for approval (d.Held) was approved unless the approval stage
// refused it (rule approval-*). A refusal no person made (timed out,
// dismissed, cancelled) names warden as its approver, and its rule says
// why.
func approvalStatus(d *Decision) (status, approver string) {
	switch {
	case d.Held.IsZero() && d.Approver == "":
		return "", ""
	case d.Denial != nil && strings.HasPrefix(string(d.Denial.Rule), "approval-"):
		if d.Approver == "" {
			return "denied", "warden"
		}
		return "denied", d.Approver
	}
	return "approved", d.Approver
}

// telemetryDenial is telemetry's view of dn.
func telemetryDenial(dn *Denial) *telemetry.Denial {
	return &telemetry.Denial{Stage: dn.Stage, Rule: string(dn.Rule), Invariant: dn.Invariant, Reason: dn.Reason, Code: dn.Code}
}

// addFindings puts findings on op: one aitf.security.threat_detected span
// event and one OCSF Detection Finding each, and on its span the summary of
// all of the operation's findings: prior (its request's, when op is the
// span of a request being answered) and findings.
func addFindings(op *telemetry.Operation, prior, findings []secproc.Finding) {
	if len(findings) == 0 {
		return
	}
	now := time.Now()
	for _, f := range findings {
		op.Events = append(op.Events, telemetry.Event{Name: secproc.EventThreatDetected, Attributes: f.EventAttributes(), Time: now})
		op.Findings = append(op.Findings, f.OCSFFinding(""))
	}
	op.Attributes = secproc.SpanAttributes(append(slices.Clip(prior), findings...))
}

// resourceNames holds what each session's upstream called its resources
// in its resources/list answers (a resource's title, else its name), by
// URI, so that a resources/read span names the resource as the server
// does. A session's names go when it ends; at most maxResourceNames are
// kept in all, and what the upstream lists beyond that is not learned.
type resourceNames struct {
	mu    sync.Mutex
	bySes map[[2]string]map[string]string // (upstream, session) → uri → name
	n     int                             // names held, across sessions
}

const maxResourceNames = 1 << 16

// learn records the names of the resources listed in result, the answer
// to resources/list.
func (rn *resourceNames) learn(upstream, session string, result []byte) {
	var list struct {
		Resources []struct {
			URI   string `json:"uri"`
			Name  string `json:"name"`
			Title string `json:"title"`
		} `json:"resources"`
	}
	if jsonrpc.Unmarshal(result, &list) != nil || len(list.Resources) == 0 {
		return
	}
	key := [2]string{upstream, session}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.bySes == nil {
		rn.bySes = make(map[[2]string]map[string]string)
	}
	names := rn.bySes[key]
	if names == nil {
		names = make(map[string]string)
		rn.bySes[key] = names
	}
	for _, r := range list.Resources {
		name := r.Title
		if name == "" {
			name = r.Name
		}
		if r.URI == "" || name == "" {
			continue
		}
		if _, known := names[r.URI]; !known {
			if rn.n >= maxResourceNames {
				continue
			}
			rn.n++
		}
		names[r.URI] = name
	}
}

// name returns the name the upstream listed for uri in session, "" if it
// listed none.
func (rn *resourceNames) name(upstream, session, uri string) string {
	if uri == "" {
		return ""
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.bySes[[2]string{upstream, session}][uri]
}

// forget drops a session's names.
func (rn *resourceNames) forget(upstream, session string) {
	key := [2]string{upstream, session}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.n -= len(rn.bySes[key])
	delete(rn.bySes, key)
}

// lookupString returns the string member at path of raw JSON, "" if there
// is none.
func lookupString(raw []byte, path ...string) string {
	v, ok := jsonrpc.Lookup(raw, path...)
	if !ok {
		return ""
	}
	s, _ := jsonrpc.String(v)
	return s
}
