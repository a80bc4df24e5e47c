package gateway

// Records is the gateway's Recorder: every message the relay handles
// becomes an audit record (written before the message leaves; a failed
// write stops it) and telemetry (a span, and OCSF events through the
// telemetry Recorder's sink).
//
//	client request ──► audit.Append ──► span Start (parent: params._meta.traceparent)
//	                                    └─► forwarded with _meta.traceparent of warden's span
//	upstream answer ─► audit.Append ──► span End (result or error)
//	refusal, notification ─► audit.Append ─► span Record (start and end at once)

import (
	"context"
	"strconv"
	"time"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/telemetry"
)

// Records keeps the audit log and telemetry of a gateway. It is immutable
// after construction and safe for concurrent use.
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
	// Metrics, if set, counts messages, denials and operation durations.
	Metrics *Metrics
}

// openCall is a forwarded request waiting for its answer: when it left, and
// its span (op and span are nil without spans).
type openCall struct {
	start time.Time
	op    *telemetry.Operation
	span  *telemetry.Span
}

// Record implements Recorder.
func (rs *Records) Record(ctx context.Context, d *Decision) error {
	var seq uint64
	var hash string
	if rs.Audit != nil {
		rec, err := rs.Audit.Append(ctx, auditRecord(d))
		if err != nil {
			return err
		}
		seq, hash = rec.Seq, rec.Hash
		d.AuditID = strconv.FormatUint(seq, 10)
	}
	if d.Direction == "client" && d.Kind == jsonrpc.KindRequest && d.Denial == nil {
		d.Open = &openCall{start: time.Now()}
	}
	if rs.Spans != nil {
		rs.span(ctx, d, seq, hash)
	}
	if rs.Metrics != nil {
		rs.Metrics.observe(d)
	}
	return nil
}

// auditRecord is the audit log's view of d.
func auditRecord(d *Decision) audit.Record {
	r := audit.Record{
		Time: time.Now(), Actor: d.Actor, Session: d.Session, Upstream: d.Upstream, Method: d.Method,
		RequestID: d.ID.Raw(), Tool: d.Tool, ParamsHash: d.ParamsHash, Decision: audit.Allow,
		JTI: d.JTI, Approver: d.Approver, Direction: d.Direction,
	}
	switch {
	case d.Denial != nil:
		r.Decision, r.Stage, r.Rule, r.Invariant = audit.Deny, d.Denial.Stage, d.Denial.Rule, d.Denial.Invariant
	case d.Msg != nil && d.Msg.Error != nil:
		r.Decision = audit.Error
	}
	if o, ok := d.Open.(*openCall); ok && o.op != nil && d.Direction == "upstream" {
		// The answer's record names the call it answers.
		r.Tool, r.Actor, r.ParamsHash, r.JTI, r.Approver = o.op.Tool, o.op.Actor, o.op.ParamsHash, o.op.JTI, o.op.Approver
	}
	return r
}

// span turns d into telemetry: a forwarded request opens a span that its
// answer closes; everything else is recorded at once.
func (rs *Records) span(ctx context.Context, d *Decision, seq uint64, hash string) {
	switch {
	case d.Direction == "client" && d.Kind == jsonrpc.KindRequest && d.Denial == nil:
		op := rs.operation(d)
		op.AuditSeq, op.AuditHash = seq, hash
		_, sp := rs.Spans.Start(ctx, op)
		o := d.Open.(*openCall)
		o.op, o.span = op, sp
		if rs.Propagate && d.Msg != nil {
			if params, err := telemetry.InjectMeta(d.Msg.Params, sp.Context()); err == nil {
				d.Msg = withParams(d.Msg, params)
			}
		}
	case d.Direction == "upstream" && d.Kind == jsonrpc.KindResponse:
		o, ok := d.Open.(*openCall)
		if !ok || o.op == nil {
			return // an answer to nothing: recorded in the audit log only
		}
		o.op.SetResponse(d.Msg)
		if dn := d.Denial; dn != nil {
			o.op.Denial = &telemetry.Denial{Stage: dn.Stage, Rule: dn.Rule, Invariant: dn.Invariant, Reason: dn.Reason}
		}
		addFindings(o.op, d.Findings)
		rs.Spans.End(o.span, o.op)
	case d.Kind == jsonrpc.KindResponse:
		// A client's answer to an upstream request: part of that request's
		// exchange, which has no span of its own.
	default:
		op := rs.operation(d)
		op.AuditSeq, op.AuditHash = seq, hash
		rs.Spans.Record(ctx, op)
	}
}

// operation is the telemetry view of d.
func (rs *Records) operation(d *Decision) *telemetry.Operation {
	op := &telemetry.Operation{
		Method: d.Method, FromUpstream: d.Direction != "client", Notification: d.Kind == jsonrpc.KindNotification,
		RequestID: d.ID.Raw(), Session: d.Session, Transport: rs.Transport, Upstream: d.Upstream,
		Actor: d.Actor, Tool: d.Tool, Arguments: d.Arguments, ParamsHash: d.ParamsHash, JTI: d.JTI,
		Approver: d.Approver, Start: time.Now(),
	}
	if d.Msg != nil {
		op.Params = d.Msg.Params
	}
	if d.Approver != "" {
		op.Approval = "approved"
	}
	if dn := d.Denial; dn != nil {
		op.Denial = &telemetry.Denial{Stage: dn.Stage, Rule: dn.Rule, Invariant: dn.Invariant, Reason: dn.Reason}
		if dn.Rule == "approval-denied" {
			op.Approval = "denied"
		}
	}
	addFindings(op, d.Findings)
	return op
}

// addFindings puts the security processor's findings on op: a summary on
// its span, and one OCSF Detection Finding each.
func addFindings(op *telemetry.Operation, findings []secproc.Finding) {
	if len(findings) == 0 {
		return
	}
	op.Attributes = append(op.Attributes, secproc.SpanAttributes(findings)...)
	for _, f := range findings {
		op.Findings = append(op.Findings, f.OCSFFinding(""))
	}
}

// withParams returns a copy of m with params replaced.
func withParams(m *jsonrpc.Message, params []byte) *jsonrpc.Message {
	out := jsonrpc.NewRequest(m.ID, m.Method, params)
	out.Header, out.Related = m.Header, m.Related
	return out
}
