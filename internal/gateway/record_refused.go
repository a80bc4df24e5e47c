package gateway

// Refusals at the wire: a message a listener refuses before it could be
// decoded (malformed JSON, a duplicate key, a member in another case, too
// deep, too large, a header that disagrees with the body) never reaches a
// relay, so no stage records it. The listener tells the gateway first
// (transport.Refusal, through OnRefused), and the gateway records it as
// any other refusal: one audit record, method MethodRefused, decision
// "deny", the listener's stage and rule, the client's error message as its
// reason and, as its cause, the raw bytes' length and SHA-256 (never the
// bytes); then its span and OCSF event, through the same Recorder.
//
//	listener: decode fails ──► OnRefused ──► Recorder.Record (audit: durable) ──► span, OCSF
//	                                    ◄──────────────────────────────────────┘
//	          error response written (the same whether or not the record was written)
//
// The answer waits for the record (no record before the answer leaves, no
// evidence): every refusal is recorded, however many an attacker sends, and
// each waits on its own request's goroutine, so a flood slows the flooder,
// not the listener's other clients. The wait is bounded by
// refusedRecordTimeout: a record that cannot be written in time (or at all)
// is logged at Error, and the refusal is answered all the same, since the
// message is refused either way and nothing of it goes on.

import (
	"context"
	"strconv"
	"time"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// MethodRefused is the method of the audit record of a message refused at
// the wire, before its own method could be read.
const MethodRefused = "warden/refused"

// refusedRecordTimeout bounds how long the answer to a refused message
// waits for its record.
const refusedRecordTimeout = 5 * time.Second

// onRefused returns the OnRefused hook of a listener relaying to upstream.
func (g *Gateway) onRefused(upstream string) transport.OnRefusedFunc {
	return func(ctx context.Context, ref transport.Refusal) {
		g.recordRefused(ctx, upstream, ref)
	}
}

// OnRefused returns the hook to set as transport.StreamOptions.OnRefused on
// a client stream served with ServeConn(…, upstream, …), as `warden gateway
// --stdio` does, so that the lines it refuses are recorded as the HTTP
// listener's refusals are.
func (g *Gateway) OnRefused(upstream string) transport.OnRefusedFunc {
	return g.onRefused(upstream)
}

// recordRefused writes the record of ref, waiting at most
// refusedRecordTimeout; a failure is logged.
func (g *Gateway) recordRefused(ctx context.Context, upstream string, ref transport.Refusal) {
	if g.opts.Recorder == nil {
		return
	}
	d := refusedDecision(upstream, ref)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refusedRecordTimeout)
	defer cancel()
	if err := g.opts.Recorder.Record(ctx, d); err != nil {
		g.log.Error("the record of a refused message could not be written; refused all the same",
			"upstream", upstream, "transport", ref.Transport, "rule", string(d.Denial.Rule),
			"remote", ref.RemoteAddr, "sha256", ref.SHA256, "bytes", ref.Length, "err", err)
	}
}

// refusedDecision is the Decision recorded for ref: a client message denied
// by the listener's stage and rule, whose reason is what the client was told
// and whose cause (for the record, not the client) locates the fault and
// identifies the raw bytes.
func refusedDecision(upstream string, ref transport.Refusal) *Decision {
	det := ref.Detail()
	reason, code := "", int64(0)
	if ref.Err != nil {
		reason, code = ref.Err.Message, ref.Err.Code
	}
	kind := jsonrpc.KindNotification
	if ref.ID.IsValid() {
		kind = jsonrpc.KindRequest
	}
	return &Decision{
		Upstream: upstream, Session: ref.Session, Kind: kind, Method: MethodRefused, ID: ref.ID,
		Direction: "client", Actor: ref.Principal, Arrived: time.Now(),
		Denial: &Denial{Stage: det.Stage, Rule: deny.Rule(det.Rule), Reason: reason, Code: code, Cause: refusedCause(ref, det)},
	}
}

// refusedCause is the cause of ref's record: the raw bytes' length and
// hash first (the reason is cut at audit.MaxReason bytes), then where the
// fault is and who sent it, e.g.
// "raw 98 bytes sha256 9f…; code -32700 at $.params.name offset 61; http 400 from 127.0.0.1:5123",
// and for a session id the listener does not hold, "; unknown session ID"
// (transport.SanitizeSessionID).
func refusedCause(ref transport.Refusal, det jsonrpc.Detail) string {
	b := make([]byte, 0, 192)
	b = append(b, "raw "...)
	b = strconv.AppendInt(b, ref.Length, 10)
	b = append(b, " bytes"...)
	if ref.SHA256 != "" {
		b = append(b, " sha256 "...)
		b = append(b, ref.SHA256...)
	} else {
		b = append(b, " (not read whole: no hash)"...)
	}
	if ref.Err != nil {
		b = append(b, "; code "...)
		b = strconv.AppendInt(b, ref.Err.Code, 10)
	}
	if det.Path != "" {
		b = append(b, " at "...)
		b = append(b, det.Path...)
	}
	if det.Offset > 0 {
		b = append(b, " offset "...)
		b = strconv.AppendInt(b, int64(det.Offset), 10)
	}
	b = append(b, "; "...)
	b = append(b, ref.Transport...)
	if ref.Status != 0 {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(ref.Status), 10)
	}
	if ref.RemoteAddr != "" {
		b = append(b, " from "...)
		b = append(b, ref.RemoteAddr...)
	}
	if ref.ClaimedSession != "" {
		// Cut and sanitized by the listener: no more of the client's string.
		b = append(b, "; unknown session "...)
		b = append(b, ref.ClaimedSession...)
	}
	return string(b)
}

// recorderCounts reports whether the gateway's Recorder counts what it
// records (refusals at the wire included) in m, so that the listener's
// OnRefuse need not count them again.
func (g *Gateway) recorderCounts(m *Metrics) bool {
	rs, ok := g.opts.Recorder.(*Records)
	return ok && rs.Metrics == m
}
